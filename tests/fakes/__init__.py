"""Fakes of outside services that tests start on loopback."""
