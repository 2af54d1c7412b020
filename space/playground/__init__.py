"""The Playground's serving: one training at a time in a fresh process, a queue of visitors, and the tab's
handlers (settings to run configs, the training stream, Stop, trying the trained models).  Below the models'
serving: the Space's context holds a runner, and the handlers read only it and the limits."""
