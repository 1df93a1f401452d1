"""Unit tests of app/service/."""
