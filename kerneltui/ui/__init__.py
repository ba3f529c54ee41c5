"""The Textual front end. Imports Textual, never torch or triton: candidate code runs in workers."""
