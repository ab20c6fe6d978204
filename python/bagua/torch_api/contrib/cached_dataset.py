"""CachedDataset: a map-style dataset whose samples are cached after their
first load (CacheLoader keyed by the index)."""
import operator

from torch.utils.data.dataset import Dataset

from .cache_loader import CacheLoader

__all__ = ["CachedDataset"]


def _index(item):
    """An integer-like index (a NumPy or 0-d tensor one) as an int, so that
    its key is "{dataset_name}_3" however the sampler spelled 3."""
    try:
        return operator.index(item)
    except TypeError:
        return item


class CachedDataset(Dataset):
    def __init__(self, dataset, backend="redis", dataset_name="", writer_buffer_size=20,
                 **kwargs):
        """Wraps `dataset` so that each sample is computed once, then read from
        the cache (key "{dataset_name}_{index}"). DataLoader's batched fetch
        (`__getitems__`) reads a whole batch with one request.

        Samples must be a deterministic function of the index (cache the
        decoding, augment after: see CacheLoader for that split). Arguments
        as CacheLoader's.

        Example::

            >>> dataset = CachedDataset(ImageFolder(root), backend="memory",
            ...                         dataset_name="train", capacity_per_node=64 << 30)
            >>> loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=4)
        """
        self.dataset = dataset
        try:
            tag = f"{type(dataset).__qualname__}:{len(dataset)}"
        except TypeError:  # no len(): paired by name and order only
            tag = ""
        self.cache_loader = CacheLoader(backend, dataset_name, writer_buffer_size,
                                        _pairing_tag=tag, **kwargs)

    def _load_many(self, indices):
        many = getattr(self.dataset, "__getitems__", None)
        if many is not None:
            return many(indices)
        return [self.dataset[i] for i in indices]

    def __getitem__(self, item):
        return self.cache_loader.get_many([_index(item)], self._load_many)[0]

    def __getitems__(self, items):
        return self.cache_loader.get_many([_index(i) for i in items], self._load_many)

    def __len__(self):
        return len(self.dataset)

    def stats(self):
        """The cache's counters (CacheLoader.stats)."""
        return self.cache_loader.stats()
