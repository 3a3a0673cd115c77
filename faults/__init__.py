"""Fault injectors for one node each: apply, verify by measurement, revert; journaled so a crash never leaves a
fault behind."""
