"""Pretraining Explorer's inference engine: models, inference and training.

Nothing here imports gradio; every function a tab, a test or a notebook needs is
callable from this package.
"""
