"""The Ray actor of a worker (``ray_worker``) and the search task it runs (``task``)."""
