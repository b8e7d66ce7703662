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

        The file is checked against the checkpoint the server started from before anything is loaded: the
        reload empties each layer it touches and refills it from the file, so a layer the file covers only in
        part (or with the wrong shapes) would be left holding uninitialised memory, and generation would go on
        from garbage (seen: NaN log-probs the server cannot even encode).

        Raises:
            ValueError: If the file does not match the checkpoint's names and shapes (nothing was loaded), or did
                not cover every parameter of the model.

        Returns:
            How many tensors were loaded.
        """
        from safetensors.torch import load_file

        tensors = load_file(path, device="cpu")
        self._agentrl_check_update(tensors)
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

    def _agentrl_check_update(self, tensors: dict[str, Any]) -> None:
        """Refuse an update whose names or shapes differ from the served checkpoint's (see agentrl_load_weights)."""
        expected = self._agentrl_checkpoint_shapes()
        if expected is None:  # not a safetensors checkpoint: only the check after loading applies
            return
        runner = self.model_runner  # pyright: ignore[reportAttributeAccessIssue]  # vLLM's worker, mixed into, has it
        optional = {"lm_head.weight"} if _tied_embeddings(runner) else set()
        missing = sorted(set(expected) - set(tensors) - optional)
        unknown = sorted(set(tensors) - set(expected) - optional)
        reshaped = [
            f"{name} {tuple(tensor.shape)} (served: {expected[name]})"
            for name, tensor in sorted(tensors.items())
            if name in expected and tuple(tensor.shape) != expected[name]
        ]
        problems = []
        if missing:
            problems.append(f"did not cover {len(missing)} of the served checkpoint's tensors, e.g. {missing[:5]}")
        if unknown:
            problems.append(f"has {len(unknown)} tensors the checkpoint does not, e.g. {unknown[:5]}")
        if reshaped:
            problems.append(f"has {len(reshaped)} tensors of another shape, e.g. {reshaped[:3]}")
        if problems:
            raise ValueError(
                "The update " + "; ".join(problems) + ". Nothing was loaded: the server keeps its weights. Send the "
                "full state dict of the model the server was started from."
            )

    def _agentrl_checkpoint_shapes(self) -> dict[str, tuple[int, ...]] | None:
        """Names and shapes of the served checkpoint's tensors, from its safetensors headers (read once).

        ``None`` when the checkpoint is not safetensors (or a hub model not in the local cache).
        """
        if not hasattr(self, "_agentrl_shapes"):
            self._agentrl_shapes = _checkpoint_shapes(self.model_runner.model_config)  # pyright: ignore[reportAttributeAccessIssue]
        return self._agentrl_shapes

    @staticmethod
    def _agentrl_retie(runner: Any) -> bool:
        """Bring a tied ``lm_head`` up to date with the new input embeddings.

        vLLM 0.32's layerwise reload only reprocesses layers it loaded weights for; a tied ``lm_head`` gets none
        (the checkpoint has no ``lm_head.weight``), so the kernel copy the CPU backend prepacked from it keeps the
        old weights. Found by the tests comparing against transformers after an update.
        """
        model = runner.model
        if not _tied_embeddings(runner):
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


def _tied_embeddings(runner: Any) -> bool:
    """Whether the served model ties ``lm_head`` to the input embeddings (its checkpoint then has no lm_head)."""
    hf_config = runner.model_config.hf_config
    text_config = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    return bool(getattr(text_config, "tie_word_embeddings", False))


def _checkpoint_shapes(model_config: Any) -> dict[str, tuple[int, ...]] | None:
    import glob
    import os

    from safetensors import safe_open

    model_dir = model_config.model
    if not os.path.isdir(model_dir):
        try:
            from huggingface_hub import snapshot_download

            model_dir = snapshot_download(
                model_dir, revision=model_config.revision, local_files_only=True, allow_patterns=["*.safetensors"]
            )
        except Exception:  # noqa: BLE001  # not cached locally: the server loaded it some other way
            return None
    files = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
    if not files:
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        with safe_open(file, framework="pt") as handle:
            for name in handle.keys():  # noqa: SIM118  # safe_open is not a mapping
                shapes[name] = tuple(handle.get_slice(name).get_shape())
    return shapes
