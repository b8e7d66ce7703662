"""vLLM worker extension that loads new policy weights from a safetensors file (runs inside the vLLM server).

This file is imported by vLLM's worker processes (``--worker-extension-cls vllm_worker_ext.WeightSyncExtension``,
with this directory on ``PYTHONPATH``), in vLLM's own interpreter, so it imports nothing from this project.
The trainer writes its state dict to a file (on tmpfs when it can), then calls the ``collective_rpc`` endpoint
with :meth:`WeightSyncExtension.agentrl_load_weights`; vLLM runs utility calls between two engine steps, so
requests in flight are not dropped: their remaining tokens are sampled with the new weights.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WeightSyncExtension"]


class WeightSyncExtension:
    """Mixed into vLLM's worker class; ``self.model_runner`` is the worker's model runner."""

    def agentrl_load_weights(self, path: str) -> int:
        """Load every tensor in the safetensors file at ``path`` with vLLM's layerwise in-place reload.

        The reload takes checkpoint (Hugging Face) parameter names, does the model's fusing (q/k/v, gate/up)
        and re-runs the kernels' weight post-processing (the CPU backend repacks linear weights, so a plain
        ``model.load_weights`` finds empty parameters); the trainer can send ``model.state_dict()`` as is.

        Raises:
            ValueError: If the file did not cover every parameter of the model.

        Returns:
            How many tensors were loaded.
        """
        from safetensors.torch import load_file

        tensors = load_file(path, device="cpu")
        from vllm.model_executor.model_loader.reload import finalize_layerwise_reload, initialize_layerwise_reload

        runner = self.model_runner  # pyright: ignore[reportAttributeAccessIssue]  # vLLM's worker, mixed into, has it
        model = runner.get_model()
        expected = {name for name, _ in model.named_parameters()}
        # What the runner's reload_weights does, keeping the names loaded: vLLM only warns about a partial
        # update, and a policy whose weights are half new must fail loudly instead.
        initialize_layerwise_reload(model)
        loaded = set(model.load_weights(iter(tensors.items())) or ())
        finalize_layerwise_reload(model, runner.model_config)
        tied = self._agentrl_retie(runner)
        missing = sorted(expected - loaded - ({"lm_head.weight"} if tied else set()))
        if missing:
            raise ValueError(f"The update did not cover {len(missing)} parameters, e.g. {missing[:5]}.")
        self._agentrl_loads = self.agentrl_weight_loads() + 1
        return len(tensors)

    def agentrl_weight_loads(self) -> int:
        """How many weight updates this worker has loaded since it started (tests count pushes with it)."""
        return int(getattr(self, "_agentrl_loads", 0))

    @staticmethod
    def _agentrl_retie(runner: Any) -> bool:
        """Bring a tied ``lm_head`` up to date with the new input embeddings.

        vLLM 0.32's layerwise reload only reprocesses layers it loaded weights for; a tied ``lm_head`` gets none
        (the checkpoint has no ``lm_head.weight``), so the kernel copy the CPU backend prepacked from it keeps the
        old weights. Found by the tests comparing against transformers after an update.
        """
        model = runner.model
        hf_config = runner.model_config.hf_config
        text_config = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
        if not getattr(text_config, "tie_word_embeddings", False):
            return False
        lm_head = getattr(model, "lm_head", None)
        embed = getattr(getattr(model, "model", None), "embed_tokens", None)
        if lm_head is None or embed is None:
            return False
        if lm_head.weight is not embed.weight:
            if lm_head.weight.shape != embed.weight.shape:
                raise RuntimeError(
                    f"Cannot re-tie lm_head {tuple(lm_head.weight.shape)} to embed_tokens {tuple(embed.weight.shape)}."
                )
            lm_head.weight.data.copy_(embed.weight.data)
        # Kernels may keep their own copy (the CPU backend prepacks the lm_head GEMM weight): rebuild it.
        method = getattr(lm_head, "quant_method", None)
        if method is not None and hasattr(method, "process_weights_after_loading"):
            method.process_weights_after_loading(lm_head)
        return True
