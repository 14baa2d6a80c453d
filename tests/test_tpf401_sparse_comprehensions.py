"""TPF401 knows two more array sources: the dense form of a SciPy sparse matrix
(``.toarray()`` / ``.todense()``, through ``.tocsr()`` and ``.T``) and an item of a list
comprehension whose element is an array (``feats = [np.asarray(r) for r in rows]`` then
``feats[i][:, j]``), also inside a function. An object whose kind is unknown
(``other.toarray()``), a sparse matrix's reductions and comprehensions of lists stay
silent."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "ratings.py": """
        import numpy as np
        import torch
        import scipy.sparse as sps
        from scipy import sparse


        class Ratings(torch.utils.data.Dataset):
            def __init__(self, users, items, n_users, n_items, given):
                grid = sparse.csr_matrix((np.ones(len(users)), (users, items)), shape=(n_users, n_items))
                self.dense = torch.FloatTensor(grid.toarray())  #!
                self.flipped = torch.FloatTensor(grid.T.toarray())  #!
                self.other = torch.FloatTensor(sps.coo_matrix(given).tocsr().todense())  #!
                self.opaque = torch.FloatTensor(given.toarray())
                self.totals = torch.FloatTensor(grid.sum(axis=1))
                self.sizes = torch.LongTensor(grid.shape)

            def __len__(self):
                return self.dense.shape[0]
    """,
    "batching.py": """
        import numpy as np
        import torch


        def collate(sentences, column):
            columns = [np.asarray(s[1]) for s in sentences]
            width = len(columns[0][0])
            first = torch.LongTensor(columns[0])  #!
            picked = [torch.LongTensor(columns[i][:, column]) for i in range(len(sentences))]  #!
            lists = [np.asarray(s[1]).tolist() for s in sentences]
            plain = torch.LongTensor(lists[0])
            shapes = [np.asarray(s[1]).shape for s in sentences]
            dims = torch.LongTensor(shapes[0])
            return first, picked, plain, dims, width


        def stacked(rows):
            parts = (np.stack(r) for r in rows)
            for part in parts:
                yield torch.tensor(part)  #!
    """,
}


def test_sparse_dense_forms_and_comprehension_items_are_arrays(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF401") == _marked(PROJECT)
