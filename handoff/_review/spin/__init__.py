"""Spin's second opinion: the review's world as a Promela model, checked by Spin."""
