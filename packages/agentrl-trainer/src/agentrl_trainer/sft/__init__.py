"""Supervised warm start: transcripts rendered exactly as rollouts render them, trained with TRL's SFTTrainer."""
