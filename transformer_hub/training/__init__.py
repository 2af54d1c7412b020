"""Training (section 5 of the paper): the trainer and its run, data, schedule, checkpoints, warm start,
the decisions all ranks take together, and the metrics.

    python -m transformer_hub train ...     # transformer_hub.training.trainer.main
"""
