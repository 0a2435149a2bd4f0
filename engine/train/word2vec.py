"""Train word2vec on the packaged English text and save it under checkpoints/trained/.

    nice python -m engine.train.word2vec --name packaged-text --epochs 5

The work is done by `engine.word2vec_training` (also used by the app's training panel).
"""

from engine.word2vec_training import main

if __name__ == "__main__":
    main()
