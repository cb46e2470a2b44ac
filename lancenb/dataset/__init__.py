"""The Lance table format: datasets with versions, fragments, transactions and deletions.

``write_dataset``/``dataset``/``LanceDataset`` mirror pylance's API; see
:mod:`lancenb.dataset.core`.
"""

from lancenb.dataset.core import LanceDataset, Tags, dataset, write_dataset
from lancenb.dataset.fragment import DataFile, FragmentMetadata, LanceFragment
from lancenb.dataset.scanner import LanceScanner

__all__ = ["LanceDataset", "LanceFragment", "LanceScanner", "Tags", "DataFile",
           "FragmentMetadata", "dataset", "write_dataset"]
