"""Model specs, one module per role; each registers itself with `engine.registry`.

Heavy libraries (transformers, timm, gensim) are imported inside loaders, never at
module import, so start-up stays fast.
"""
