"""What a file or a payload says, whatever its format, and comparing it by meaning.

- `extract(data, name, limits=Limits()) -> Extracted`: the format (by magic bytes, then name), the text a
  reader sees, and each member of a container, within hard `Limits` (blindact.content.extract).
- `normalize(text)`, `holds(haystack, needle, kind)`, `locate(...)`: protected data found however it
  is written (blindact.content.compare).
- `office`: the readers of documents, presentations and spreadsheets that checks use.

Pure library code: it imports nothing from the rest of blindact but its own layer.
"""

from blindact.content.compare import KINDS, Kind, holds, locate, normalize
from blindact.content.extract import Extracted, extract, extract_file
from blindact.content.limits import Limits

__all__ = ["KINDS", "Extracted", "Kind", "Limits", "extract", "extract_file", "holds", "locate", "normalize"]
