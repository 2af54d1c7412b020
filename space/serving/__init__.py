"""The models' serving: the languages, the model store, the per-direction choice of model, the decoding worker and
its micro-batcher, the quality worker, the context every tab receives, and the calls the tabs and routes make
(``service``: the library's pipeline over the Space's models)."""
