"""2-D projections of vectors for a scatter plot (PCA; UMAP when umap-learn is installed)."""

from __future__ import annotations

import importlib.util

import numpy as np

from ..errors import CapabilityError, InputError
from ..validation import check_array

PROJECTIONS = ("pca", "umap")


def project_2d(vectors, method: str = "pca") -> np.ndarray:
    """(N, 2) float32 coordinates of N vectors for a scatter plot.

    "pca": the first two principal components (numpy SVD of the centred vectors), each
    component's sign fixed so that its largest loading is positive (same input, same
    picture). "umap": UMAP, only if the umap-learn package is installed.
    """
    if method not in PROJECTIONS:
        raise InputError(f"Unknown projection {method!r}; choose one of: {', '.join(PROJECTIONS)}.")
    x = check_array(vectors, "The vectors")
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise InputError(
            f"project_2d needs an (N, d) array of finite numbers with N >= 2 and d >= 1; "
            f"got shape {x.shape}."
        )
    if method == "umap":
        if importlib.util.find_spec("umap") is None:
            raise CapabilityError(
                "UMAP needs the umap-learn package, which is not installed here; use method='pca'."
            )
        import umap

        neighbours = max(2, min(15, x.shape[0] - 1))
        return umap.UMAP(n_components=2, n_neighbors=neighbours, random_state=0).fit_transform(x).astype(np.float32)
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)  # vt: (k, d), k = min(N, d)
    vt = vt[:2]
    signs = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(axis=1)])
    points = centred @ (vt * signs[:, None]).T  # (N, <=2)
    if points.shape[1] < 2:
        points = np.pad(points, ((0, 0), (0, 2 - points.shape[1])))
    return points.astype(np.float32)
