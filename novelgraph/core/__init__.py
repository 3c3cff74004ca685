"""The kernel: what every app of NovelGraph stands on, importing none of them."""
