"""One widget module per pane of the main screen."""
