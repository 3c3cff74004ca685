"""Sol, Terra and Luna acting inside NovelGraph (issue 16): the runner, its providers and its tasks."""
