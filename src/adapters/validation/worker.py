"""The validation worker: a process of its own that reads documents and runs the rules.

Saxon-HE's Python binding (``saxonche``) holds the GIL for the whole of every call, so a
transform run in a thread of the server would stop its event loop for as long as it lasts (a
second for a 1 MiB invoice). Each worker process owns one ``PySaxonProcessor`` and compiles the
rules of a syntax once, the first time a document of that syntax arrives; the server talks to
it over a pipe (``adapters.validation.pool``).

A request is the document, as bytes or as the path of a file. The answer is a tuple:
``("ok", Checked | Located)``, ``("invalid", [(field, problem), ...])`` when intake's parser
refuses the document, ``("failed", reason)`` when the rules raised an error on it (an amount
that is not a number, say), or ``("error", traceback)`` for anything else (a bug). Saxon also
prints each error it raises on the standard error stream; the worker's is closed, because the
answer carries the same message.
"""

from __future__ import annotations

import os
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import attrs
from lxml import etree

from fourcorner.adapters.validation.dispatch import by_name
from fourcorner.adapters.validation.document import Located, read
from fourcorner.adapters.validation.report import only_reporting
from fourcorner.adapters.validation.rules import PIPELINE, RULES, Syntax, titles
from fourcorner.adapters.validation.traversal import elements_only
from fourcorner.domain.errors import InvalidInput

SVRL = "http://purl.oclc.org/dsdl/svrl"
_EXTRACT = """<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:sh="http://www.unece.org/cefact/namespaces/StandardBusinessDocumentHeader">
  <xsl:template match="/">
    <xsl:copy-of select="/*/*[not(self::sh:StandardBusinessDocumentHeader)][1]"/>
  </xsl:template>
</xsl:stylesheet>"""
_SVRL_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)


@attrs.frozen
class Checked:
    """A billing document's outcome: the failed asserts as ``(id, flag, location, text)`` in
    the order of the reports, and the reports merged into one SVRL document."""

    located: Located
    rules: str
    failed: list[tuple[str, str, str, str]]
    svrl: bytes


class Engine:
    """Saxon, the compiled rules of each syntax met so far, and the payload extractor."""

    def __init__(self, rules_dir: Path) -> None:
        from saxonche import PySaxonApiError, PySaxonProcessor  # only workers load Saxon

        self.saxon_error: type[Exception] = PySaxonApiError
        self._dir = rules_dir
        self._processor = PySaxonProcessor(license=False)
        self._compiler = self._processor.new_xslt30_processor()
        self._compiled: dict[Syntax, list[Any]] = {}
        self._extract: Any = None

    def rules(self, syntax: Syntax) -> list[Any]:
        """The compiled rule sets of ``syntax``: each ``.sch`` run through SchXslt's
        ``pipeline-for-svrl.xsl``, and the XSLT it writes compiled, once per process, walking
        the document's elements alone (``adapters.validation.traversal``), each rule found by
        the name of the element it is given (``adapters.validation.dispatch``), and building
        nothing for a rule that reports nothing (``adapters.validation.report``)."""
        if syntax not in self._compiled:
            pipeline = self._compiler.compile_stylesheet(stylesheet_file=str(self._dir / PIPELINE))
            pipeline.set_parameter("schxslt.svrl.compact", self._processor.make_boolean_value(True))
            compiled = []
            for rule_set in RULES[syntax]:
                written = pipeline.transform_to_string(source_file=str(self._dir / rule_set.file))
                xslt = only_reporting(by_name(elements_only(written)))
                compiled.append(self._compiler.compile_stylesheet(stylesheet_text=xslt))
            self._compiled[syntax] = compiled
        return self._compiled[syntax]

    def _document(self, source: bytes | str, located: Located, text: str | None) -> Any:
        if text is not None:  # the business document itself, read by ``read``
            return self._processor.parse_xml(xml_text=text)
        if isinstance(source, bytes):
            node = self._processor.parse_xml(xml_text=source.decode("utf-8-sig"))
        else:
            node = self._processor.parse_xml(xml_file_name=source)
        if not located.in_sbd:
            return node
        if self._extract is None:
            self._extract = self._compiler.compile_stylesheet(stylesheet_text=_EXTRACT)
        return self._extract.transform_to_value(xdm_node=node).head.get_node_value()

    def _run(
        self, source: bytes | str, located: Located, text: str | None, compiled: list[Any]
    ) -> Checked:
        assert located.syntax is not None
        document = self._document(source, located, text)
        reports = [rules.transform_to_string(xdm_node=document) for rules in compiled]
        del document
        failed, svrl = _merge(reports, titles(located.syntax))
        return Checked(located, titles(located.syntax), failed, svrl)

    def answer(self, source: bytes | str) -> tuple[str, Any]:
        try:
            located, text = read(source)
            if located.syntax is None:
                return "ok", located
            compiled = self.rules(located.syntax)
        except InvalidInput as e:
            return "invalid", [(d.field, d.problem) for d in e.problems]
        except Exception:  # the rules did not compile: not the document's fault
            return "error", traceback.format_exc()
        try:
            return "ok", self._run(source, located, text, compiled)
        except self.saxon_error as e:  # the rules raised an error on this document
            return "failed", " ".join(str(e).split())[:2000]
        except Exception:
            return "error", traceback.format_exc()


def _merge(reports: list[str], title: str) -> tuple[list[tuple[str, str, str, str]], bytes]:
    """The failed asserts of the SVRL ``reports``, and one SVRL document holding them all."""
    merged = etree.Element(f"{{{SVRL}}}schematron-output", nsmap={"svrl": SVRL}, title=title)
    failed = []
    for report in reports:
        root = etree.fromstring(report.encode(), _SVRL_PARSER)
        for child in list(root):
            if child.tag == f"{{{SVRL}}}failed-assert":
                text = child.find(f"{{{SVRL}}}text")
                failed.append(
                    (
                        child.get("id", ""),
                        child.get("flag", ""),
                        child.get("location", ""),
                        " ".join("".join(text.itertext()).split()) if text is not None else "",
                    )
                )
            merged.append(child)
    return failed, etree.tostring(merged, xml_declaration=True, encoding="UTF-8")


def serve(conn: Connection, rules_dir: str) -> None:
    """The worker's loop: answer each request until the pipe closes or ``None`` arrives."""
    engine = Engine(Path(rules_dir))  # fails loudly, before the error stream is closed
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        answer = engine.answer(request)
        try:
            conn.send(answer)
        except OSError:  # the server stopped waiting (it closed the pipe)
            return
