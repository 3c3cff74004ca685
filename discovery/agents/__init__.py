"""Sol, Terra and Luna acting inside NovelGraph: the runner, its providers and its tasks."""
