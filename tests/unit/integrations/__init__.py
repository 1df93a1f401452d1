"""Unit tests of app/integrations/."""
