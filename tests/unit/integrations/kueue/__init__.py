"""Unit tests of app/integrations/kueue/, one file a module."""
