"""Evaluation: model backends, the resumable run loop, SR/QR/pass@k/diversity metrics and
leaderboards."""
