"""Supervised warm start: recorded transcripts rendered exactly as rollouts render them, trained with TRL's SFTTrainer."""
