"""Training scripts for the checkpoints this project trains itself (python -m engine.train.<name>)."""
