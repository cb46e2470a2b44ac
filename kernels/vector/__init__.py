"""Vector kernels: distances (``distance.py``), top-k selection (``topk.py``), k-means
assignment and updates (``kmeans.py``), product quantisation (``pq.py``)."""
