"""Image extension types of :mod:`lancenb.arrow` (pylance's names and extension names).

* ``lance.arrow.image_uri`` (:class:`ImageURIType`, storage string or large_string):
  where images are; :meth:`ImageURIArray.read_uris` reads them (local paths and any URI
  lancenb's I/O layer opens, plus http(s)).
* ``lance.arrow.encoded_image`` (:class:`EncodedImageType`, binary or large_binary):
  image files' bytes (PNG, JPEG, ...).
* ``lance.arrow.fixed_shape_image_tensor`` (:class:`FixedShapeImageTensorType`,
  ``fixed_size_list<T>[prod(shape)]``, metadata ``{"shape": [...]}``): pixels.
"""

from __future__ import annotations

import io
import json
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa

from lancenb import io as lio

_STRING = pa.string()
_BINARY = pa.binary()

__all__ = ["ImageURIType", "EncodedImageType", "FixedShapeImageTensorType", "ImageArray",
           "ImageURIArray", "EncodedImageArray", "FixedShapeImageTensorArray", "ImageScalar"]


def _is_string(t) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_binary(t) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


class _ImageType(pa.ExtensionType):
    """Shared by the image types: no parameters but the storage type."""

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(storage_type)

    def __reduce__(self):
        return type(self).__arrow_ext_deserialize__, (self.storage_type,
                                                      self.__arrow_ext_serialize__())


class ImageURIType(_ImageType):
    """Image URIs (``lance.arrow.image_uri``)."""

    def __init__(self, storage_type: pa.DataType = _STRING):
        if not _is_string(storage_type):
            raise ValueError("storage_type must be a string type")
        pa.ExtensionType.__init__(self, storage_type, "lance.arrow.image_uri")

    def __arrow_ext_class__(self):
        return ImageURIArray

    def __arrow_ext_scalar_class__(self):
        return ImageScalar


class EncodedImageType(_ImageType):
    """Encoded image files (``lance.arrow.encoded_image``)."""

    def __init__(self, storage_type: pa.DataType = _BINARY):
        if not _is_binary(storage_type):
            raise ValueError("storage_type must be a binary type")
        pa.ExtensionType.__init__(self, storage_type, "lance.arrow.encoded_image")

    def __arrow_ext_class__(self):
        return EncodedImageArray

    def __arrow_ext_scalar_class__(self):
        return ImageScalar


class FixedShapeImageTensorType(pa.ExtensionType):
    """Pixels of images of one ``shape`` (``lance.arrow.fixed_shape_image_tensor``)."""

    def __init__(self, arrow_type: pa.DataType, shape):
        if len(shape) == 0:
            raise ValueError("an image tensor shape needs at least one dimension")
        self.shape = list(shape) if not isinstance(shape, tuple) else shape
        self.arrow_type = arrow_type
        pa.ExtensionType.__init__(self, pa.list_(arrow_type, int(np.prod(shape))),
                                  "lance.arrow.fixed_shape_image_tensor")

    def __arrow_ext_serialize__(self) -> bytes:
        return json.dumps({"shape": list(self.shape)}).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(storage_type.value_type, json.loads(serialized.decode())["shape"])

    def __arrow_ext_class__(self):
        return FixedShapeImageTensorArray

    def __arrow_ext_scalar_class__(self):
        return ImageScalar

    def __reduce__(self):
        return type(self).__arrow_ext_deserialize__, (self.storage_type,
                                                      self.__arrow_ext_serialize__())


class ImageScalar(pa.ExtensionScalar):
    """One image: ``as_py()`` is its storage value (URI, bytes or pixel list)."""

    def as_py(self, **kwargs):
        return self.value.as_py(**kwargs) if self.value is not None else None


class ImageArray(pa.ExtensionArray):
    """Base of the image arrays; :meth:`from_array` picks the right one."""

    def __repr__(self) -> str:
        return f"<lance.arrow.{type(self).__name__} object at 0x{id(self):016x}>\n" \
               f"{self.to_pylist()!r}"

    @classmethod
    def from_array(cls, images):
        """An image array of strings (URIs), binaries (encoded images), a
        ``pyarrow`` fixed-shape tensor array (pixels), an image array (itself) or an
        iterable of URIs.

        Examples
        --------
        >>> ImageArray.from_array(["a.png"]).type.extension_name
        'lance.arrow.image_uri'
        """
        if isinstance(images, ImageArray):
            return images
        if isinstance(images, (pa.StringArray, pa.LargeStringArray)):
            return pa.ExtensionArray.from_storage(ImageURIType(images.type), images)
        if isinstance(images, (pa.BinaryArray, pa.LargeBinaryArray)):
            return pa.ExtensionArray.from_storage(EncodedImageType(images.type), images)
        if isinstance(images, pa.FixedShapeTensorArray):
            typ = FixedShapeImageTensorType(images.type.value_type, images.type.shape)
            return pa.ExtensionArray.from_storage(typ, images.storage)
        if isinstance(images, (list, tuple, Iterable)) and not isinstance(images, (str, bytes)):
            return pa.ExtensionArray.from_storage(
                ImageURIType(), pa.array([str(x) for x in images], type=pa.string()))
        raise TypeError(f"Cannot build a ImageArray from {type(images)}")


def _read_uri(uri: str) -> bytes:
    if uri.startswith(("http://", "https://")):
        from urllib.request import urlopen

        with urlopen(uri) as response:
            return response.read()
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    reader = lio.open_reader(uri)
    try:
        return reader.read(0, reader.size())
    finally:
        reader.close()


class ImageURIArray(ImageArray):
    """Image URIs (local paths, object-store URIs, http(s))."""

    @classmethod
    def from_uris(cls, uris) -> "ImageURIArray":
        """An array of a string array or an iterable of URIs (str or Path).

        Examples
        --------
        >>> ImageURIArray.from_uris(["/tmp/1.png"]).to_pylist()
        ['/tmp/1.png']
        """
        if isinstance(uris, (pa.StringArray, pa.LargeStringArray)):
            storage = uris
        elif isinstance(uris, Iterable):
            storage = pa.array([str(u) for u in uris], type=pa.string())
        else:
            raise TypeError(f"Cannot build a ImageURIArray from {type(uris)}")
        return cls.from_storage(ImageURIType(storage.type), storage)

    def read_uris(self, storage_type: pa.DataType = _BINARY) -> "EncodedImageArray":
        """The images' bytes (``storage_type``: ``pa.large_binary()`` past 2 GiB)."""
        images = [None if u is None else _read_uri(u) for u in self.storage.to_pylist()]
        return EncodedImageArray.from_storage(EncodedImageType(storage_type),
                                              pa.array(images, type=storage_type))


def _pillow():
    try:
        from PIL import Image
    except ImportError as e:
        raise ValueError("No image codec available: install pillow or pass a decoder/"
                         "encoder") from e
    return Image


class EncodedImageArray(ImageArray):
    """Encoded images (any format; Pillow decodes them by default)."""

    def __repr__(self) -> str:
        first = self.storage[0].as_py() if len(self) else b""
        try:
            image = repr(_pillow().open(io.BytesIO(first)))
            shown = f"\n[{image}, ..]"
        except Exception:  # noqa: BLE001 - a repr must not fail on undecodable bytes
            shown = ""
        return f"<lance.arrow.EncodedImageArray object at 0x{id(self):016x}>{shown}\n" \
               f"{first[:30]!r}"

    def to_tensor(self, decoder: Callable | None = None) -> "FixedShapeImageTensorArray":
        """Decode to pixels: ``decoder`` takes the binary storage array and returns an
        ``(n, *shape)`` NumPy array (default: Pillow; all images of one shape)."""
        if decoder is None:
            image = _pillow()

            def decoder(images):
                return np.stack([np.asarray(image.open(io.BytesIO(b)))
                                 for b in images.to_pylist()])
        pixels = decoder(self.storage)
        if isinstance(pixels, pa.FixedShapeTensorArray):
            return ImageArray.from_array(pixels)
        pixels = np.asarray(pixels)
        tensors = pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(pixels))
        typ = FixedShapeImageTensorType(pa.from_numpy_dtype(pixels.dtype), pixels.shape[1:])
        return pa.ExtensionArray.from_storage(typ, tensors.storage)


class FixedShapeImageTensorArray(ImageArray):
    """Pixels of images of one shape."""

    def to_numpy(self) -> np.ndarray:
        """The images as one ``(n, *shape)`` array."""
        typ = pa.fixed_shape_tensor(self.storage.type.value_type, list(self.type.shape))
        return pa.ExtensionArray.from_storage(typ, self.storage).to_numpy_ndarray()

    def to_encoded(self, encoder: Callable | None = None,
                   storage_type: pa.DataType = _BINARY) -> EncodedImageArray:
        """Encode the images (``encoder`` takes the ``(n, *shape)`` array and returns a
        binary array; default: PNG with Pillow)."""
        if encoder is None:
            image = _pillow()

            def encoder(pixels):
                out = []
                for p in pixels:
                    with io.BytesIO() as buf:
                        image.fromarray(p).save(buf, format="PNG")
                        out.append(buf.getvalue())
                return pa.array(out, type=storage_type)
        return EncodedImageArray.from_storage(EncodedImageType(storage_type),
                                              encoder(self.to_numpy()))
