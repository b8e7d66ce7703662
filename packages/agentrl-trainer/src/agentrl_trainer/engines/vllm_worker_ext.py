"""vLLM worker extension that loads new policy weights from a safetensors file (runs inside the vLLM server).

This file is imported by vLLM's worker processes (``--worker-extension-cls vllm_worker_ext.WeightSyncExtension``,
with this directory on ``PYTHONPATH``), in vLLM's own interpreter, so it imports nothing from this project.
The trainer writes its state dict to a file (on tmpfs when it can), then calls the ``collective_rpc`` endpoint
with :meth:`WeightSyncExtension.agentrl_load_weights`; vLLM runs utility calls between two engine steps, so
requests in flight are not dropped: their remaining tokens are sampled with the new weights.
"""

from __future__ import annotations

__all__ = ["WeightSyncExtension"]


class WeightSyncExtension:
    """Mixed into vLLM's worker class; ``self.model_runner`` is the worker's model runner."""

    def agentrl_load_weights(self, path: str) -> int:
        """Load every tensor in the safetensors file at ``path`` with vLLM's in-place ``reload_weights``.

        ``reload_weights`` takes checkpoint (Hugging Face) parameter names, does the model's fusing (q/k/v,
        gate/up) and re-runs the kernels' weight post-processing (the CPU backend repacks linear weights, so a
        plain ``model.load_weights`` finds empty parameters); the trainer can send ``model.state_dict()`` as is.

        Returns:
            How many tensors were loaded.
        """
        from safetensors.torch import load_file

        tensors = load_file(path, device="cpu")
        self.model_runner.reload_weights(weights_iterator=iter(tensors.items()), is_checkpoint_format=True)  # type: ignore[attr-defined]
        return len(tensors)
