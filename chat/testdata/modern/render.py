#!/usr/bin/python3
"""Reference renders of the 2025-26 chat templates, as transformers makes them.

Run from this folder with Debian's Python 3 and python3-jinja2 (3.1.2):

    /usr/bin/python3 render.py

For every templates/T.jinja and contexts/C.json it writes expected/T__C.txt
(the render, UTF-8, no newline added) or expected/T__C.error (Python raised;
the message is informative only), and index.tsv. The environment is
transformers' _compile_jinja_template, as ../../../../shared/chat/README.md
describes it; see README.md here.
"""

import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

# bos_token and eos_token of each template's model (tokenizer_config.json).
TOKENS = {
    "google-gemma-3-it.jinja": ("<bos>", "<eos>"),
    "HuggingFaceTB-SmolLM3-3B.jinja": ("", "<|im_end|>"),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("<|end_of_text|>", "<|end_of_text|>"),
    "openai-gpt-oss-120b.jinja": ("<|startoftext|>", "<|return|>"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ("<s>", "</s>"),
    "google-gemma-4-31B-it.jinja": ("<bos>", "<eos>"),
    "google-gemma-4-31B-it-interleaved.jinja": ("<bos>", "<eos>"),
    "Qwen-Qwen3-0.6B.jinja": ("", "<|im_end|>"),
}

DEFAULT_NOW = "2024-07-26T00:00:00"


class AssistantTracker(Extension):
    """{% generation %}…{% endgeneration %} renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


class TemplateError(Exception):
    pass


def make_env(now):
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    if jinja2.__version__ != "3.1.2":
        sys.exit(f"want Jinja2 3.1.2 (Debian's python3-jinja2), have {jinja2.__version__}")
    templates = sorted(os.listdir("templates"))
    contexts = sorted(os.listdir("contexts"))
    for f in os.listdir("expected"):
        os.remove(os.path.join("expected", f))
    rows = ["template\tcontext\toutcome"]
    for t in templates:
        with open(os.path.join("templates", t), "rb") as f:
            src = f.read().decode("utf-8")  # byte for byte: no newline conversion
        bos, eos = TOKENS[t]
        for c in contexts:
            with open(os.path.join("contexts", c), encoding="utf-8") as f:
                ctx = json.load(f)
            now = datetime.fromisoformat(ctx.get("now", DEFAULT_NOW))
            variables = {"bos_token": bos, "eos_token": eos, "tools": None, "documents": None,
                         "add_generation_prompt": False}
            variables.update({k: v for k, v in ctx.items() if k != "now"})
            name = t[: -len(".jinja")] + "__" + c[: -len(".json")]
            try:
                out = make_env(now).from_string(src).render(**variables)
                outcome = "ok"
                path, data = name + ".txt", out
            except Exception as e:
                outcome = "error"
                path, data = name + ".error", f"{type(e).__name__}: {e}\n"
            with open(os.path.join("expected", path), "wb") as f:
                f.write(data.encode("utf-8"))
            rows.append(f"{t}\t{c}\t{outcome}")
    with open("index.tsv", "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    print(f"{len(rows) - 1} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
