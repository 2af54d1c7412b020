"""Beyond one process: a whole corpus through the library's translation pipeline on Ray Data (``run_job``), with
blocks written as part files so that a job cut short resumes where it stopped (``blocks``).  Ray is the optional
extra ``scale`` (``pip install 'transformer_hub[scale]'``): only ``job.run_job`` needs it."""
from .blocks import CorpusError, Item, PartsFolder, read_items
from .job import CorpusJob, JobReport, MissingRay, require_ray, run_job, start_cluster
from .translator import Translator, load_models

__all__ = ["CorpusError", "CorpusJob", "Item", "JobReport", "MissingRay", "PartsFolder", "Translator",
           "load_models", "read_items", "require_ray", "run_job", "start_cluster"]
