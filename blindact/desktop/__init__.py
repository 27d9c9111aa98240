"""Desktop providers and readers: the X display, its apps and their accessibility trees."""
