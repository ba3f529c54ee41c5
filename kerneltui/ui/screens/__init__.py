"""Screens: main (the five panes), help, profile view, file-changed prompt, path prompts."""
