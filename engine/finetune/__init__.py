"""The fine-tuning lab: frozen vs fine-tuned vs from-scratch training on small tasks.

- `tasks`: the tasks and their fixed train / val / test splits;
- `bodies`: pretrained networks cut into units (so the lowest N can be frozen);
- `config`: a run's settings, checked and capped;
- `trainer`: the training loop (cancel, NaN detection, step and time budgets);
- `store`: runs in SQLite under the data directory;
- `lab`: one run end to end, streamed as snapshots (`finetune`), and the stored runs.
"""

from engine.finetune.config import MODES, make_config
from engine.finetune.lab import finetune, last_result, new_token, request_cancel, runs
from engine.finetune.tasks import TASK_NAMES, get_task

__all__ = ["MODES", "TASK_NAMES", "finetune", "get_task", "last_result", "make_config", "new_token",
           "request_cancel", "runs"]
