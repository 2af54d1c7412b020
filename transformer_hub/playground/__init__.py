"""The playground: train the project's own ``Transformer`` on a synthetic task and watch each idea of the paper matter.

    from transformer_hub.playground import RunConfig, train
    for event in train(RunConfig(task="reverse", positions="none", budget_seconds=20)):
        print(event.kind, event.step, event.loss, event.exact_match)

``train`` runs in this process; ``TrainingProcess(config)`` runs it in a spawned one (one torch thread).
``LESSONS`` are A/B pairs for four ideas (positions, causal mask, heads, warm-up); ``predict`` decodes a
visitor's input with a trained model.
"""
from .lessons import LESSONS, SWITCH_NOTES, Lesson
from .parts import NORMS, POSITIONS, build_model, label
from .run import MAX_BUDGET_SECONDS, MAX_PARAMETERS, RunConfig
from .tasks import TASKS, VOCAB, get_task, number_words
from .trainer import Event, evaluate, parse_source, predict, snapshot, train
from .worker import TrainingProcess

__all__ = ["LESSONS", "SWITCH_NOTES", "Lesson", "NORMS", "POSITIONS", "build_model", "label", "MAX_BUDGET_SECONDS",
           "MAX_PARAMETERS", "RunConfig", "TASKS", "VOCAB", "get_task", "number_words", "Event", "evaluate",
           "parse_source", "predict", "snapshot", "train", "TrainingProcess"]
