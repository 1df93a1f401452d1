"""Unit tests of app/controllers/."""
