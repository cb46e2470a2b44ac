"""Parts of :mod:`lancenb.arrow` kept in their own modules, as pylance keeps them in
``lance._arrow``: the image extension types (:mod:`.images`)."""
