"""Fine-tuning lab tab and the `/finetune` and `/runs` endpoints (API.md).

Small real training runs: the same task learned from a frozen pretrained body, a
fine-tuned one, or the same architecture from random weights, with live curves, a
cancel button, earlier runs overlaid and every run kept in SQLite. No tensor maths
here: training lives in `engine.finetune`; this module only draws and wires.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import gradio as gr
import plotly.graph_objects as go

from app import deeplinks
from app.common import TRAIN_QUEUE, api, guarded
from app.i18n import translator
from engine import paths
from engine.errors import UserInputError
from engine.finetune import lab
from engine.finetune.config import FAMILY_DEPTH, MODES
from engine.finetune.store import RunStoreError, default_store
from engine.finetune.tasks import TASK_NAMES, get_task

TITLE = "Fine-tuning"
KEY = "finetune"
tr = translator(KEY)

STRINGS = {
    "en": {
        "intro": "### Fine-tuning lab: frozen vs fine-tuned vs from scratch\n"
                 "Pick a task with only a few hundred labelled examples and train a small classifier on top of a "
                 "pretrained network, live. **frozen**: the pretrained layers stay fixed and only a new output layer "
                 "learns. **finetune**: every layer learns, the pretrained ones at a lower rate. **scratch**: the "
                 "same network with random weights. Accuracy is measured on held-out examples never used in training.",
        "task": "Task", "model": "Pretrained model", "mode": "Mode",
        "freeze": "Freeze the lowest N layers",
        "freeze_info": "finetune mode: 0 = every layer learns; the maximum = frozen",
        "steps": "Steps", "lr": "Learning rate", "seed": "Seed",
        "run": "Train", "cancel": "Cancel", "overlay": "Overlay earlier runs of this task",
        "runs": "Stored runs", "refresh": "Refresh", "export": "Export CSV",
        "why_title": "Why frozen features already work, and why scratch struggles",
        "why": "* A pretrained network has already learned, from millions of examples, features that many tasks "
               "share: word meanings and sentence structure for text, edges, textures and parts for images.\n"
               "* With a few hundred labels, **frozen** only has to learn one linear layer on those features: few "
               "parameters, little data needed, and it cannot overfit the body.\n"
               "* **finetune** also nudges the body towards the task. A lower rate for the pretrained layers keeps "
               "what they know; freezing the lowest layers (generic features) is a middle way.\n"
               "* **scratch** must learn the features and the task from the same few hundred examples, with millions "
               "of parameters: it memorises the training set (training loss near zero) and generalises poorly.\n"
               "* Frozen runs are fast here: frozen layers are computed once per example and reused.",
        "idle": "Press **Train** to start a run. Runs queue: one trains at a time, and the others see their "
                "place in the queue.",
    },
    "zh": {
        "intro": "### 微调实验室：冻结 vs 微调 vs 从零训练\n"
                 "选一个只有几百条标注样本的任务，在预训练网络之上现场训练一个小分类器。**frozen（冻结）**：预训练层不变，"
                 "只训练新加的输出层。**finetune（微调）**：所有层都训练，预训练层用较小的学习率。**scratch（从零）**："
                 "同样的网络，权重随机初始化。准确率在训练中从未用过的留出样本上测量。",
        "task": "任务", "model": "预训练模型", "mode": "模式",
        "freeze": "冻结最底下的 N 层",
        "freeze_info": "微调模式：0 = 所有层都训练；取最大值即等于冻结",
        "steps": "步数", "lr": "学习率", "seed": "随机种子",
        "run": "开始训练", "cancel": "取消", "overlay": "叠加显示此任务以前的运行",
        "runs": "已保存的运行", "refresh": "刷新", "export": "导出 CSV",
        "why_title": "为什么冻结的特征已经好用，而从零训练很吃力",
        "why": "* 预训练网络已经从海量样本中学到了许多任务共用的特征：文本里的词义与句子结构，图像里的边缘、纹理和部件。\n"
               "* 只有几百个标注时，**冻结**只需在这些特征上学一个线性层：参数少、数据需求小，也不会把主体过拟合坏。\n"
               "* **微调**还会把主体往任务方向轻推。预训练层用较小的学习率，保留已学的知识；冻结最底下几层（通用特征）是折中办法。\n"
               "* **从零训练**要用同样几百个样本同时学特征和任务，参数却有数百万：它会记住训练集（训练损失接近零），泛化很差。\n"
               "* 这里冻结模式很快：冻结层对每个样本只计算一次，之后重复使用。",
        "idle": "点击 **开始训练**。训练排队进行：一次只训练一个，其他人会看到自己在队列中的位置。",
    },
}

MODE_COLORS = {"frozen": "#2563eb", "finetune": "#16a34a", "scratch": "#ea580c"}
PLOT_HEIGHT = 330
UI_EVERY_S = 0.4  # redraw at most this often while training
RUN_COLUMNS = ["run_id", "created_at", "task", "mode", "model", "freeze_layers", "steps", "lr", "seed",
               "eval_accuracy", "seconds", "status", "device"]
RUN_HEADERS = ["run", "created (UTC)", "task", "mode", "model", "frozen layers", "steps", "lr", "seed",
               "held-out acc.", "s", "status", "device"]
FAMILY_TITLES = {"bert": "BERT encoder", "glove": "GloVe word vectors (averaged)", "cnn": "ImageNet CNN"}


# ------------------------------------------------------------------ API (API.md)
def _public(snap: dict) -> dict:
    """A snapshot as the API returns it: history [{step, loss, accuracy}], eval {accuracy, n}."""
    out = dict(snap)
    out["history"] = [{"step": h["step"], "loss": h["loss"], "accuracy": h["accuracy"]} for h in snap["history"]]
    out["eval"] = None if snap["eval"] is None else {"accuracy": snap["eval"]["accuracy"], "n": snap["eval"]["n"]}
    out["seconds"] = round(float(snap["seconds"]), 3)
    return out


def finetune(task: str, mode: str, steps: int, lr: float, seed: int, model: str = "",
             freeze_layers: int = -1) -> Iterator[dict]:
    """Train one run and stream snapshots; the last has run_id, task, mode, device, seconds,
    history [{step, loss}], eval {accuracy, n} on held-out data. A run whose loss turns NaN
    ends with an error saying so (it is stored as diverged)."""
    snap: dict = {}
    for snap in lab.finetune(task, mode, steps, lr, seed, model=model, freeze_layers=freeze_layers):
        yield _public(snap)
    if snap.get("status") == "diverged":
        raise UserInputError(snap["message"])


def runs() -> dict:
    """Stored runs newest first: {run_id, task, mode, steps, eval_accuracy, created_at, ...}."""
    try:
        return {"runs": lab.runs(), "database": str(default_store().path)}
    except RunStoreError as exc:
        raise UserInputError(str(exc)) from None


# ------------------------------------------------------------------ figures
def _smooth(values: list[float], alpha: float = 0.2) -> list[float]:
    out, acc = [], None
    for v in values:
        acc = v if acc is None else alpha * v + (1 - alpha) * acc
        out.append(acc)
    return out


def _label(run: dict) -> str:
    acc = run.get("eval_accuracy")
    if acc is None and isinstance(run.get("eval"), dict):
        acc = run["eval"]["accuracy"]
    tail = f" · {acc:.0%}" if isinstance(acc, (int, float)) else ""
    return f"{run['mode']} {str(run['run_id'])[:6]}{tail}"


def figures(snap: dict | None, earlier: list[dict]) -> tuple[go.Figure, go.Figure]:
    """Loss and accuracy figures: the current run solid, earlier runs dotted and faint."""
    loss, acc = go.Figure(), go.Figure()
    for run in earlier:
        color = MODE_COLORS.get(run["mode"], "#64748b")
        hist = run.get("history") or []
        if hist:
            loss.add_scatter(x=[h["step"] for h in hist], y=_smooth([h["loss"] for h in hist]), mode="lines",
                             name=_label(run), line=dict(color=color, dash="dot", width=1.5), opacity=0.55)
        val = run.get("val_history") or []
        if val:
            acc.add_scatter(x=[v["step"] for v in val], y=[v["accuracy"] for v in val], mode="lines",
                            name=_label(run), line=dict(color=color, dash="dot", width=1.5), opacity=0.55)
    title_model = "no run yet"
    if snap and snap.get("history"):
        color = MODE_COLORS.get(snap["mode"], "#334155")
        hist = snap["history"]
        steps = [h["step"] for h in hist]
        loss.add_scatter(x=steps, y=[h["loss"] for h in hist], mode="lines", name="batch loss",
                         line=dict(color=color, width=1), opacity=0.35, showlegend=False)
        loss.add_scatter(x=steps, y=_smooth([h["loss"] for h in hist]), mode="lines", name=_label(snap) + " (now)",
                         line=dict(color=color, width=3))
        acc.add_scatter(x=steps, y=_smooth([h["accuracy"] for h in hist]), mode="lines", name="train batches (now)",
                        line=dict(color=color, width=1.5, dash="dash"), opacity=0.6)
        val = snap.get("val_history") or []
        if val:
            acc.add_scatter(x=[v["step"] for v in val], y=[v["accuracy"] for v in val], mode="lines+markers",
                            name=_label(snap) + " held-out (now)", line=dict(color=color, width=3))
    if snap and snap.get("model"):
        title_model = f"{snap['model']} · {snap['source']}"
    for fig, what, ytitle in ((loss, "Training loss", "cross-entropy"), (acc, "Accuracy", "accuracy")):
        fig.update_layout(
            height=PLOT_HEIGHT, margin=dict(l=50, r=10, t=58, b=40),
            title=dict(text=f"{what}<br><sup>{title_model[:110]}</sup>", font=dict(size=15)),
            xaxis_title="step", yaxis_title=ytitle, legend=dict(font=dict(size=11), orientation="h", y=-0.22),
            template="plotly_white",
        )
    acc.update_yaxes(range=[0, 1.02])
    loss.update_yaxes(rangemode="tozero")
    return loss, acc


def progress_html(snap: dict | None, text: str = "") -> str:
    """A progress bar with step, time and ETA (plain HTML, no scripts)."""
    if not snap:
        return f"<div class='ptx-ft-status'>{text}</div>"
    frac = snap["step"] / max(snap["steps"], 1)
    if snap["status"] == "done":
        frac = 1.0
    eta = snap.get("eta_seconds")
    parts = [f"<b>{snap['status']}</b>", f"step {snap['step']} / {snap['steps']}", f"{snap['seconds']:.1f} s"]
    if eta is not None and snap["status"] == "running" and snap["phase"] == "training":
        parts.append(f"ETA {eta:.0f} s")
    if snap.get("message") and snap["message"] not in ("done", "training"):
        parts.append(snap["message"])
    color = {"done": "#16a34a", "cancelled": "#64748b", "diverged": "#dc2626"}.get(snap["status"], "#4f46e5")
    return (f"<div class='ptx-ft-status'><div style='background:#e2e8f0;border-radius:6px;height:14px'>"
            f"<div style='width:{frac * 100:.1f}%;background:{color};height:14px;border-radius:6px'></div></div>"
            f"<div style='margin-top:4px'>{' · '.join(parts)}</div></div>")


def result_markdown(snap: dict) -> str:
    if snap["status"] == "done" and snap["eval"]:
        ev = snap["eval"]
        lines = [f"**Held-out accuracy: {ev['accuracy']:.1%}** on {ev['n']} test examples never used in training "
                 f"({snap['task_title']}, {snap['train_n']} training examples, chance "
                 f"{1 / len(snap['classes']):.0%})."]
    elif snap["status"] == "diverged":
        lines = [f"**The run diverged.** {snap['message']}"]
    else:
        lines = [f"**{snap['status']}**: {snap['message']}"]
    frozen = snap.get("frozen_units") or []
    units = snap.get("units") or []
    p = snap.get("params") or {}
    lines.append(f"Model: {snap['model']} · {snap['source']} · device `{snap['device']}` · mode **{snap['mode']}** · "
                 f"frozen {len(frozen)} of {len(units)} layers" + (f" ({', '.join(frozen)})" if 0 < len(frozen) < len(units) else "")
                 + (f" · trainable {p.get('trainable', 0):,} of {p.get('total', 0):,} parameters" if p else "")
                 + f" · lr {snap['lr']:g}" + (f", pretrained layers {snap['body_lr']:g}" if snap.get("body_lr") and snap["mode"] == "finetune" else "")
                 + f" · run `{snap['run_id']}`")
    if snap.get("notes"):
        lines.append("Note: " + "; ".join(snap["notes"]) + ".")
    if snap.get("store_error"):
        lines.append(f"⚠ Not saved: {snap['store_error']}")
    return "\n\n".join(lines)


# ------------------------------------------------------------------ UI callbacks
def _runs_table(task: str = "") -> list[list]:
    try:
        rows = lab.runs(task or None)
    except RunStoreError as exc:
        gr.Warning(str(exc))
        return []
    table = []
    for r in rows:
        row = []
        for c in RUN_COLUMNS:
            v = r.get(c)
            if c == "eval_accuracy" and v is not None:
                v = round(v, 4)
            elif c == "seconds" and v is not None:
                v = round(v, 1)
            if c == "created_at" and v:
                v = str(v).replace("T", " ").rstrip("Z")
            row.append("" if v is None else v)
        table.append(row)
    return table


def _earlier(task: str, overlay: bool, exclude: str = "") -> list[dict]:
    if not overlay:
        return []
    try:
        return lab.recent_runs(task, limit=6, exclude=exclude)
    except RunStoreError:
        return []


def _task_changed(task: str):
    t = get_task(task)
    fam = t.default_model
    b = t.budgets[fam]
    return (gr.update(choices=_family_choices(t.models), value=fam), gr.update(value=b.steps), gr.update(value=b.lr),
            gr.update(maximum=FAMILY_DEPTH.get(fam, 12), value=0))


def _family_choices(families) -> list[tuple[str, str]]:
    return [(FAMILY_TITLES.get(f, f), f) for f in families]


def _model_changed(task: str, model: str):
    t = get_task(task)
    b = t.budgets.get(model) or t.budgets[t.default_model]
    return gr.update(value=b.steps), gr.update(value=b.lr), gr.update(maximum=FAMILY_DEPTH.get(model, 12), value=0)


def _mode_changed(mode: str):
    return gr.update(interactive=mode == "finetune")


def _train_ui(task: str, model: str, mode: str, freeze: int, steps: int, lr: float, seed: int, overlay: bool,
              token: str):
    """UI stream: (status html, loss figure, accuracy figure, result markdown, runs table)."""
    earlier = _earlier(task, overlay)
    if model not in get_task(task).models:
        model = ""  # the model list had not caught up with a task change yet
    last = 0.0
    snap: dict | None = None
    freeze_layers = int(freeze) if mode == "finetune" else -1
    for snap in lab.finetune(task, mode, steps, lr, seed, model=model, freeze_layers=freeze_layers,
                             cancel_token=token):
        now = time.perf_counter()
        if snap["status"] in ("done", "cancelled", "diverged"):
            continue  # the last snapshot is drawn once, below, with the result and the table
        if now - last >= UI_EVERY_S:
            last = now
            loss_fig, acc_fig = figures(snap, earlier)
            text = gr.skip() if snap["step"] > 1 else (
                f"Training **{snap['mode']}** · {snap['task_title']} · {snap['model'] or snap['message']}")
            yield progress_html(snap), loss_fig, acc_fig, text, gr.skip()
    if snap is None:
        return
    if snap["status"] == "diverged":
        gr.Warning(snap["message"])
    loss_fig, acc_fig = figures(snap, earlier)
    yield progress_html(snap), loss_fig, acc_fig, result_markdown(snap), _runs_table()


def _cancel(token: str) -> None:
    lab.request_cancel(token)


def _export():
    try:
        target = paths.outputs_dir() / f"finetune_runs_{time.strftime('%Y%m%d-%H%M%S')}.csv"
        return gr.update(value=str(default_store().export_csv(target)), visible=True)
    except (RunStoreError, OSError) as exc:
        raise UserInputError(str(exc)) from None


def build() -> None:
    gr.Markdown(tr("intro"), elem_classes=["ptx-explain"])
    token = gr.State("")
    first = get_task(TASK_NAMES[0])
    budget = first.budgets[first.default_model]
    with gr.Row():
        with gr.Column(scale=1, min_width=340):
            task = gr.Dropdown(choices=[(get_task_title(n), n) for n in TASK_NAMES], value=first.name,
                               label=tr("task"), elem_id="ft-task")
            # allow_custom_value: a Train click racing a task change must not fail in preprocessing;
            # _train_ui falls back to the task's default model.
            model = gr.Dropdown(choices=_family_choices(first.models), value=first.default_model, label=tr("model"),
                                allow_custom_value=True, elem_id="ft-model")
            mode = gr.Radio(list(MODES), value="finetune", label=tr("mode"), elem_id="ft-mode")
            with gr.Row():
                run_btn = gr.Button(tr("run"), variant="primary", elem_id="ft-run", min_width=90)
                cancel_btn = gr.Button(tr("cancel"), variant="stop", elem_id="ft-cancel", min_width=90)
            freeze = gr.Slider(0, FAMILY_DEPTH[first.default_model], step=1, value=0, label=tr("freeze"),
                               info=tr("freeze_info"))
            with gr.Row():
                steps = gr.Number(budget.steps, precision=0, label=tr("steps"), minimum=1, min_width=70,
                                  elem_id="ft-steps")
                lr = gr.Number(budget.lr, label=tr("lr"), min_width=130)
                seed = gr.Number(0, precision=0, label=tr("seed"), minimum=0, min_width=60)
            overlay = gr.Checkbox(True, label=tr("overlay"))
        with gr.Column(scale=3):
            status = gr.HTML(progress_html(None, ""), elem_id="ft-status")
            with gr.Row():
                empty = figures(None, [])
                loss_plot = gr.Plot(empty[0], show_label=False, elem_id="ft-loss")
                acc_plot = gr.Plot(empty[1], show_label=False, elem_id="ft-acc")
            result = gr.Markdown(tr("idle"), elem_id="ft-result")
    with gr.Accordion(tr("why_title"), open=True):
        gr.Markdown(tr("why"), elem_classes=["ptx-explain"])
    with gr.Accordion(tr("runs"), open=True):
        table = gr.Dataframe(None, headers=RUN_HEADERS, interactive=False, wrap=False,
                             max_height=300, elem_id="ft-runs")
        with gr.Row():
            refresh = gr.Button(tr("refresh"), size="sm")
            export = gr.Button(tr("export"), size="sm")
        csv_file = gr.File(label="CSV", visible=False, height=60)

    task.change(_task_changed, task, [model, steps, lr, freeze], api_visibility="private", queue=False)
    model.input(_model_changed, [task, model], [steps, lr, freeze], api_visibility="private", queue=False)
    mode.change(_mode_changed, mode, freeze, api_visibility="private", queue=False)
    run_event = run_btn.click(lab.new_token, None, token, api_visibility="private", queue=False).then(
        guarded(_train_ui), [task, model, mode, freeze, steps, lr, seed, overlay, token],
        [status, loss_plot, acc_plot, result, table], api_visibility="private",
        show_progress="full", show_progress_on=[status], **TRAIN_QUEUE)
    cancel_btn.click(_cancel, token, None, api_visibility="private", queue=False)
    refresh.click(_runs_table, None, table, api_visibility="private")
    export.click(guarded(_export), None, csv_file, api_visibility="private")
    del run_event
    root = gr.context.Context.root_block  # the enclosing app: refresh the table on every page load
    if root is not None:
        root.load(_runs_table, None, table, api_visibility="private")

    # Deep links (?tab=finetune&task=faces&mode=frozen) fill the form; a training run (up to
    # a minute of the shared device) starts only when the person presses Train.
    deeplinks.register(KEY, {"task": task, "mode": mode})
    api(finetune, "finetune", **TRAIN_QUEUE)
    api(runs, "runs")


def get_task_title(name: str) -> str:
    return get_task(name).title


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
