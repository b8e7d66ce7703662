"""Tiny local models for CPU training: a byte-level BPE tokenizer trained on task text and a small Qwen2.

There is no model hub on the machines this project is tested on, so tests, the quickstart and the CPU
benches build their model here: a tokenizer trained with ``tokenizers`` on the text the tasks show (plus
the chat template's own strings), carrying TRL's Qwen2.5 chat template so tool calls render and parse
exactly as for a real Qwen model, and a Qwen2 decoder of a few hundred thousand parameters. Both are
cached under ``$AGENTRL_CACHE_DIR/tiny-models/<hash>`` and rebuilt when their inputs change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

from agentrl_envs.core import resolve_cache_dir
from agentrl_trainer.cache_keys import without_later_defaults

__all__ = ["SPECIAL_TOKENS", "TinyModelSpec", "build_tiny_model", "build_tiny_tokenizer"]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
"""Qwen2.5's control tokens: the pad token, the turn markers (``<|im_end|>`` is EOS) and the tool-call tags."""


PRETOKENIZERS = ("bytelevel", "words")
"""The tiny tokenizer's pre-tokenizers (see :attr:`TinyModelSpec.pretokenizer`)."""


@dataclass(frozen=True)
class TinyModelSpec:
    """Size of the tiny Qwen2 model and its tokenizer."""

    vocab_size: int = 512
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 4096
    seed: int = 0
    pretokenizer: str = "bytelevel"
    """How text is cut before BPE: ``bytelevel`` (GPT-2's: a word carries its leading space) or ``words``
    (every space and punctuation mark is its own piece, so a word is the same tokens wherever it stands)."""
    copy_pretrain_steps: int = 0
    """Steps of copy pre-training (:mod:`agentrl_trainer.copy_pretrain`) on the freshly built model before it is
    saved: synthetic sequences only copying predicts, so the model starts with the circuit that copies names
    from its prompt. 0: none (the random initialisation)."""

    def __post_init__(self) -> None:
        """Check the pre-tokenizer's name and that the heads divide the model."""
        if self.copy_pretrain_steps < 0:
            raise ValueError(f"copy_pretrain_steps must be 0 (none) or more, got {self.copy_pretrain_steps}.")
        if self.pretokenizer not in PRETOKENIZERS:
            raise ValueError(f"pretokenizer must be one of {PRETOKENIZERS}, got {self.pretokenizer!r}.")
        heads, kv_heads = self.num_attention_heads, self.num_key_value_heads
        if heads < 1 or self.hidden_size % heads or kv_heads < 1 or heads % kv_heads:
            raise ValueError(
                f"{heads} attention heads ({kv_heads} key/value heads) do not divide hidden size {self.hidden_size}: "
                "the hidden size must be a multiple of the heads, and the heads of the key/value heads."
            )


def _chat_template() -> str:
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def _template_text() -> list[str]:
    """Strings the chat template itself emits, so they tokenize compactly."""
    return [
        "<|im_start|>system\n",
        "<|im_start|>user\n",
        "<|im_start|>assistant\n",
        "<|im_end|>\n",
        '\n<tool_call>\n{"name": "',
        '", "arguments": ',
        "}\n</tool_call>",
        "\n<tool_response>\n",
        "\n</tool_response>",
        "You may call one or more functions to assist with the user query.",
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
        '{"type": "function", "function": {"name": ',
        '"description": ',
        '"parameters": {"type": "object", "properties": {',
        '"required": [',
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}'
        "\n</tool_call><|im_end|>\n",
    ]


def _digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


_ADDED_LATER = {"pretokenizer": "bytelevel", "copy_pretrain_steps": 0}
"""Spec fields added after models were cached, at the value that builds what was built before them."""


def _cache_path(source: object, spec: TinyModelSpec) -> Path:
    fields = without_later_defaults(asdict(spec), _ADDED_LATER)
    if spec.copy_pretrain_steps:  # the stage's recipe: a change of its defaults builds a new model
        from agentrl_trainer.copy_pretrain import CopyPretrainSettings

        fields["copy_pretrain"] = asdict(CopyPretrainSettings())
    key = _digest({"corpus": source, "spec": fields, "template": _chat_template(), "v": 1})
    return resolve_cache_dir() / "tiny-models" / key


def build_tiny_tokenizer(  # noqa: ANN201
    corpus: Iterable[str], *, vocab_size: int = 512, path: Path | None = None, pretokenizer: str = "bytelevel"
):
    """Train a byte-level BPE tokenizer on ``corpus`` and wrap it as a transformers tokenizer.

    Byte-level pre-tokenization means any text encodes (no unknown token), which the rollout loop relies on
    when it appends environment messages the tokenizer never saw.

    ``pretokenizer="words"`` first cuts the text at every space and punctuation mark (each its own piece), so a
    name is the same tokens in a sentence (``is Hotel Listings,``) and in SQL (`` `Hotel Listings` ``). With
    GPT-2's cut the first word is `` Hotel`` in one and ``Hotel`` in the other: a model that must copy names
    from its prompt into a statement then has to learn a token mapping instead of copying (what a tiny model
    fails at, see docs/benchmarks.md "Learning on real DB: what we tried").

    Args:
        corpus: Text the model will read and write: prompts, tool schemas, observations, answers.
        vocab_size: Target vocabulary, special tokens included.
        path: Directory to save the tokenizer to (skipped when ``None``).
        pretokenizer: ``bytelevel`` or ``words`` (see :attr:`TinyModelSpec.pretokenizer`).

    Returns:
        A ``PreTrainedTokenizerFast`` with Qwen2.5's chat template and TRL's response parser attached.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import add_response_schema

    texts = [*_template_text(), *corpus]
    bpe = Tokenizer(models.BPE())
    if pretokenizer == "words":
        bpe.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(r"\s|[^\w\s]"), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:2],
    )
    tokenizer.chat_template = _chat_template()
    tokenizer.padding_side = "left"
    if path is not None:
        tokenizer.save_pretrained(path)
    return add_response_schema(tokenizer)


def build_tiny_model(
    corpus: Iterable[str] | Callable[[], Iterable[str]],
    spec: TinyModelSpec | None = None,
    *,
    identity: object | None = None,
) -> Path:
    """Build (or reuse from the cache) a tiny Qwen2 model and tokenizer trained on ``corpus``.

    Args:
        corpus: Task text for the tokenizer (see :func:`build_tiny_tokenizer`), or a function returning it
            (called only when the model is not cached).
        spec: Model size; the defaults make a ~100k-parameter model that trains in seconds on a CPU.
        identity: What the corpus is made from (JSON-able), to key the cache by instead of the corpus text.
            Pass it when the text is not reproducible: a task whose setup is random (OS dev 25's stock log is
            generated anew each reset) would otherwise give a new model, and a new SFT warm-up, every run.

    Returns:
        The directory holding the model and tokenizer, loadable with ``from_pretrained``.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    spec = spec or TinyModelSpec()
    texts: list[str] | None = None
    if identity is None:
        texts = sorted(set(corpus() if callable(corpus) else corpus))
    path = _cache_path({"identity": identity} if identity is not None else texts, spec)
    if (path / "config.json").is_file() and (path / "tokenizer.json").is_file():
        return path
    if texts is None:
        texts = sorted(set(corpus() if callable(corpus) else corpus))
    tmp = path.with_name(path.name + ".tmp")
    tokenizer = build_tiny_tokenizer(texts, vocab_size=spec.vocab_size, path=tmp, pretokenizer=spec.pretokenizer)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=cast(int, tokenizer.eos_token_id),  # the tiny tokenizer has both (transformers types them loosely)
        pad_token_id=cast(int, tokenizer.pad_token_id),
    )
    torch.manual_seed(spec.seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if spec.copy_pretrain_steps:
        from agentrl_trainer.copy_pretrain import copy_pretrain

        copy_pretrain(model, tokenizer, spec.copy_pretrain_steps, seed=spec.seed, log_every=100)
    model.save_pretrained(tmp)
    tmp.replace(path) if not path.exists() else None
    return path


def load_tokenizer(path: str | Path):  # noqa: ANN201
    """Load a tokenizer and attach TRL's response parser when its chat template is a known one."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import add_response_schema

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    try:
        add_response_schema(tokenizer)
    except ValueError:  # a template TRL does not know: the tokenizer must carry its own response_template
        pass
    return tokenizer
