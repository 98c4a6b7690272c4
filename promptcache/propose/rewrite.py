"""Apply a template's plan to one logged record: the edits, in an order that keeps every part
path valid while it is used, then the record read again and its breakpoints placed on what it
now holds.

1. text edits by path: volatile spans out of the template (:mod:`.spans`), items sorted, documents
   sorted, JSON keys in the conversation sorted;
2. the moved spans appended to the newest user (or tool) turn;
3. structure: summaries after the stable template parts, emptied Anthropic blocks removed, tools
   sorted or canonical, the oldest history messages cut in batches (:mod:`.history`);
4. routing and lifetime fields: ``prompt_cache_key``, ``provider.order``,
   ``prompt_cache_retention``;
5. breakpoints (Anthropic bodies): the record is read again, and the anchor, the newest stable
   block and the window behind it are marked (:mod:`.breakpoints`), with the lifetime's TTLs.

A request its template's pattern does not match keeps its content; it is counted as unmatched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ..content import stable_documents
from ..errors import BadRecord
from ..model import Request
from . import edits
from .breakpoints import place
from .conversations import LIMIT, Conversations, Insertions, Link, conversation, message_chains, messages
from .history import GROWTH, Histories, Tip, message_hash, size as history_size
from .logio import copy_record
from .identity import conversation_identity, derived_key
from .logio import body_of, drop_usage, set_upstream
from .plan import Plan
from .spans import take
from .templates import JSON_BREAK, TemplateIndex, line_span, region, sort_lines


@dataclass
class Rewritten:
    """What rewriting one record gave.

    Attributes:
        record: the record to write (the input's own when nothing changed).
        changed: whether anything changed.
        request: the request as the proposed record holds it (read again when changed).
        link: its place in its conversation, in the proposed log.
        anchor: path of the last part of its template's stable content (the anchor), or ``None``.
    """

    record: Any
    changed: bool
    request: Request
    link: Link | None
    anchor: str | None = None


@dataclass
class Rewriter:
    """Applies plans to records in the audit's order (history batches and conversations need it).

    Attributes:
        plans: plan per template key.
        index: the template index of the first pass.
        reparse: reads a rewritten record back: ``reparse(record, original request) ->
            Request | None``.
        unmatched: per template id, requests whose text did not match their template.
        unpinned: per template id, requests whose record names no upstream the proposal could
            set to the pinned one (they keep their own in the proposed log).
    """

    plans: dict[tuple[str, ...], Plan]
    index: TemplateIndex
    reparse: Callable[[Any, Request], Request | None]
    unmatched: dict[str, int] = field(default_factory=dict)
    unpinned: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.conversations = Conversations()
        self.histories = Histories()
        self.insertions = Insertions()
        #: conversation (chained hash up to a message's end, as logged) → the text a plan
        #: appended to that message when it was the newest turn: later requests re-send it
        self.stamps: dict[int, str] = {}
        #: conversation (chained hash up to its end, as logged) → that request's response
        self.returned: dict[int, Any] = {}

    def key_of(self, req: Request) -> tuple[str, ...]:
        """A request's template key (the first pass's families)."""
        return self.index.key_for(req)

    def rewrite(self, rec: Any, req: Request) -> Rewritten:
        """Rewrite one record (a copy; ``rec`` is left as it is) for its request's template."""
        self._appended = False
        self._region_order = [p.path for p in region(req)]
        key = self.key_of(req)
        plan = self.plans.get(key)
        if plan is None or not plan.applies:
            reg = region(req)
            anchor = reg[-1].path if reg else None
            return Rewritten(rec, False, req, self.conversations.link(req, key), anchor)
        new = copy_record(rec)
        located = body_of(new)
        if located is None:
            return Rewritten(rec, False, req, self.conversations.link(req, key))
        body, put_back = located
        changed = self._edit(plan, body, req, key)
        if plan.pin and plan.active("pin-routing"):
            changed |= set_upstream(new, plan.pin)
        final = req
        if changed:
            put_back()
            drop_usage(new)
            got = self.reparse(new, req)
            if got is None:
                return Rewritten(rec, False, req, self.conversations.link(req, key))
            final = got
        if plan.pin and plan.active("pin-routing"):
            up = final.response.upstream if final.response is not None else None
            if up != plan.pin:  # the record names its upstream nowhere the proposal can set
                self.unpinned[plan.template.id] = self.unpinned.get(plan.template.id, 0) + 1
        if self._bp_active(plan):
            if self._place_breakpoints(plan, body, final):
                put_back()
                drop_usage(new)
                changed = True
                final = self.reparse(new, req) or final
        elif plan.lifetime and ("anchor_ttl" in plan.lifetime) and plan.active("lifetime"):
            if self._set_ttls(plan, body):
                put_back()
                drop_usage(new)
                changed = True
                final = self.reparse(new, req) or final
        at = self._anchor(plan, final)
        return Rewritten(new if changed else rec, changed, final, self.conversations.link(final, key),
                         final.parts[at].path if at is not None else None)

    @staticmethod
    def _bp_active(plan: Plan) -> bool:
        return any(c.applied and c.kind in ("add-breakpoints", "breakpoint-window", "mark-tool-results")
                   for c in plan.changes)

    # -- 1-4: content and fields ------------------------------------------------------------

    def _edit(self, plan: Plan, body: dict[str, Any], req: Request, key: tuple[str, ...]) -> bool:
        t = plan.template
        parts_by_path = {p.path: p for p in t.parts}
        changed = False
        self._appended = False
        order = [p.path for p in region(req)]
        moved: list[str] = []
        emptied: list[str] = []
        carried = plan.active("move-slots") or plan.active("move-inserted") or plan.active("keep-tool-choice")
        msgs: list[Any] | None = None
        pos: int | None = None
        if carried:
            pos, msgs, chains = self.insertions.find(req, key) if plan.active("move-inserted") else \
                (None, *(lambda m: (m, message_chains(m, key)))(messages(conversation(req))))
            if pos is not None and msgs[pos][0] is not None:
                text = "\n".join(p.text for p in msgs[pos][1] if p.text)
                if text.strip():
                    moved.append(text)
                    emptied.append(f"{edits.message_of(msgs[pos][1][0].path)[0]}[{msgs[pos][0]}]")
                else:
                    pos = None
            changed |= self._carry(plan, body, req, msgs, chains, pos)
        if plan.active("move-slots"):
            for path, slots in plan.moves.items():
                got = self._take(plan, body, path, parts_by_path[path], slots)
                if got is None:
                    continue
                rest, texts = got
                if texts:
                    edits.set_text(body, path, rest)
                    moved.extend(texts)
                    changed = True
                    if not rest.strip() and plan.api in ("anthropic", "converse"):
                        emptied.append(path)
            for path, slots in plan.tool_moves.items():
                texts = self._take_from_tool(plan, body, path, parts_by_path[path], slots)
                if texts:
                    moved.extend(texts)
                    changed = True
        if plan.active("trim-whitespace"):
            for path, slots in plan.trims.items():
                changed |= self._trim(plan, body, path, parts_by_path[path], slots)
        if plan.active("replay-verbatim"):
            changed |= self._replay(body, req, key)
        if plan.active("sort-items"):
            for path, slots in plan.sort_items.items():
                changed |= self._sort_items(plan, body, path, parts_by_path[path], slots)
        if plan.active("sort-documents"):
            for path in plan.documents:
                try:
                    text = edits.get_text(body, path)
                except BadRecord:
                    continue
                new = stable_documents(text)
                if new != text:
                    edits.set_text(body, path, new)
                    changed = True
        if plan.canonical_history and (plan.active("canonical-json-history")):
            for p in conversation(req):
                if p.kind in ("tool_call", "tool_result"):
                    try:
                        changed |= edits.canonicalize(body, p.path, p.kind)
                    except BadRecord:
                        continue
        if plan.tool_choice is not None and plan.active("keep-tool-choice"):
            changed |= self._keep_tool_choice(plan, body, moved)
        if moved:
            self._appended = self._append(plan, body, req, "\n\n".join(moved))
            changed |= self._appended
            if self._appended and carried:
                self._remember(req, msgs, chains, "\n\n".join(moved))
        if plan.summaries and plan.active("summary-after-stable") and self._summaries_last(plan, body):
            changed = True
            order = [p for p in order if p not in plan.summaries] + [p for p in order if p in plan.summaries]
        for path in sorted(emptied, key=lambda p: edits.steps(p), reverse=True):
            try:
                if path == "system":
                    del body["system"]
                else:
                    edits.remove(body, path)
                changed = True
            except (BadRecord, KeyError, ValueError):
                continue
            if path in order:
                order.remove(path)
        self._region_order = order
        holder = body.get("toolConfig") if plan.api == "converse" else body
        tools = holder.get("tools") if isinstance(holder, dict) else None
        if isinstance(tools, list):
            marks = [x for x in tools if isinstance(x, dict) and "cachePoint" in x]  # Converse: kept last
            tools = [x for x in tools if not (isinstance(x, dict) and "cachePoint" in x)]
            new_tools = tools
            if plan.active("tool-set-union") and plan.tool_union[0][1] is not None:
                own = {edits.tool_name(x): x for x in tools}
                new_tools = [own.get(n) or copy_record(x) for n, x in plan.tool_union]
            if plan.active("sort-tools"):
                new_tools = sorted(new_tools, key=edits.tool_name)
            if plan.active("canonical-json"):
                new_tools = [edits.sort_keys_deep(x) for x in new_tools]
            if (new_tools is not tools and [edits.tool_name(x) for x in new_tools] != [edits.tool_name(x) for x in tools]) \
                    or (plan.active("canonical-json") and json.dumps(new_tools) != json.dumps(tools)):
                holder["tools"] = new_tools + marks
                changed = True
        if plan.history and plan.active("history-batches"):
            if msgs is None:
                msgs, pos = messages(conversation(req)), None
            changed |= self._keep_history(plan, body, key, msgs, pos)
        if plan.cache_key and plan.active("cache-key"):
            ident = conversation_identity(req, plan.coarse)
            if ident is not None:
                k = derived_key(t.id, ident[1])
                if body.get("prompt_cache_key") != k:
                    body["prompt_cache_key"] = k
                    changed = True
        if plan.pin and plan.active("pin-routing"):
            prov = body.get("provider") if isinstance(body.get("provider"), dict) else {}
            want = {**prov, "order": [plan.pin], "allow_fallbacks": False}
            if body.get("provider") != want:
                body["provider"] = want
                changed = True
        if plan.lifetime and "retention" in plan.lifetime and plan.active("lifetime"):
            if body.get("prompt_cache_retention") != plan.lifetime["retention"]:
                body["prompt_cache_retention"] = plan.lifetime["retention"]
                changed = True
        return changed

    @staticmethod
    def _keep_tool_choice(plan: Plan, body: dict[str, Any], moved: list[str]) -> bool:
        """The template's ``tool_choice`` in the body; what the request's own value asked of the
        model goes into ``moved`` (the end of its newest user turn)."""
        from .plan import tool_choice_instruction

        keep = json.loads(plan.tool_choice or "null")
        own = body.get("tool_choice")
        if json.dumps(own, sort_keys=True) == plan.tool_choice:
            return False
        said = tool_choice_instruction(own)
        if keep is None:
            body.pop("tool_choice", None)
        else:
            body["tool_choice"] = keep
        if said:
            moved.append(said)
        return True

    def _carry(self, plan: Plan, body: dict[str, Any], req: Request, msgs: list[Any], chains: list[int],
               skip: int | None) -> bool:
        """Re-send what the plan appended to each earlier turn of the conversation when it was
        the newest: the history stays append-only (each turn keeps the moved text it was sent
        with), so the next request reads the previous one from the cache whole."""
        if not self.stamps:
            return False
        newest = self._newest_turn(req)
        changed = False
        for k, (m, ps) in enumerate(msgs):
            text = self.stamps.get(chains[k])
            if text is None or k == skip or m is None or (newest is not None and m == newest[1]):
                continue
            where = edits.message_of(ps[0].path)
            if where is None:
                continue
            try:
                edits.append_text(body, plan.api, where, text)
            except BadRecord:
                continue
            changed = True
        return changed

    def _remember(self, req: Request, msgs: list[Any], chains: list[int], text: str) -> None:
        newest = self._newest_turn(req)
        if newest is None:
            return
        for k, (m, _) in enumerate(msgs):
            if m == newest[1]:
                if len(self.stamps) >= LIMIT:
                    for h in list(self.stamps)[: LIMIT // 2]:
                        del self.stamps[h]
                self.stamps[chains[k]] = text
                return

    def _trim(self, plan: Plan, body: dict[str, Any], path: str, part: Any, slots: list[int]) -> bool:
        """The part's whitespace-only differences gone: each slot's value without the whitespace
        around it (the rest of the text as it is)."""
        try:
            text = edits.get_text(body, path)
        except BadRecord:
            return False
        m = part.pattern().match(text)
        if m is None:
            self.unmatched[plan.template.id] = self.unmatched.get(plan.template.id, 0) + 1
            return False
        new = text
        for i in sorted(slots, key=lambda i: m.start(i + 1), reverse=True):
            a, b = m.span(i + 1)
            new = new[:a] + new[a:b].strip() + new[b:]
        if new == text:
            return False
        edits.set_text(body, path, new)
        return True

    def _replay(self, body: dict[str, Any], req: Request, key: tuple[str, ...]) -> bool:
        """Each assistant turn the request re-sends right after the conversation of an earlier
        request, set to that request's logged response (tool call arguments, text), byte for
        byte; then this request's response is remembered for the next."""
        msgs = messages(conversation(req))
        chains = message_chains(msgs, key)
        changed = False
        for j in range(len(msgs) - 1):
            resp = self.returned.get(chains[j])
            if resp is None:
                continue
            at = msgs[j + 1][0]
            for part in resp.parts:
                where = edits.message_of(part.path)
                if where is not None and where[1] == at:
                    try:
                        changed |= edits.replay(body, part.path, part.kind, part.text)
                    except BadRecord:
                        continue
        if req.response is not None and req.response.parts and chains:
            if len(self.returned) >= LIMIT:
                for h in list(self.returned)[: LIMIT // 2]:
                    del self.returned[h]
            self.returned[chains[-1]] = req.response
        return changed

    def _take(self, plan: Plan, body: dict[str, Any], path: str, part: Any, slots: list[int]) -> tuple[str, list[str]] | None:
        try:
            text = edits.get_text(body, path)
        except BadRecord:
            return None
        m = part.pattern().match(text)
        if m is None:
            self.unmatched[plan.template.id] = self.unmatched.get(plan.template.id, 0) + 1
            return None
        blocks = [i for i in slots if _block(part.slots[i], m.group(i + 1))]
        return take(text, [m.span(i + 1) for i in slots if i not in blocks], [m.span(i + 1) for i in blocks])

    def _take_from_tool(self, plan: Plan, body: dict[str, Any], path: str, part: Any, slots: list[int]) -> list[str]:
        """Spans inside a tool definition's strings (its description): the value the slot holds
        in the tool's JSON text is found in the one string of the body's tool that holds it."""
        try:
            tool = edits.get(body, path)
        except BadRecord:
            return []
        _, m = _tool_text(tool, part)
        if m is None:
            self.unmatched[plan.template.id] = self.unmatched.get(plan.template.id, 0) + 1
            return []
        out = []
        for i in slots:
            v = m.group(i + 1)
            if not v.strip():
                continue
            try:
                raw = json.loads(f'"{v}"')
            except ValueError:
                raw = v
            # a value of no volatile kind moves only out of prose (a description), never out of
            # the schema (a property name, an enum value)
            holders = [(c, k) for c, k in edits.string_leaves(tool) if raw in c[k]
                       and (part.slots[i].volatile or k == "description")]
            if len(holders) != 1 or c_count(holders[0], raw) != 1:
                continue
            c, k = holders[0]
            at = c[k].index(raw)
            span = [(at, at + len(raw))]
            rest, texts = take(c[k], [], span) if _block(part.slots[i], raw) else take(c[k], span)
            if texts:
                c[k] = rest
                name = edits.tool_name(tool)
                out.extend(f"[{name} tool] {x}" for x in texts)
        return out

    def _sort_items(self, plan: Plan, body: dict[str, Any], path: str, part: Any, runs: list[tuple[int, int]]) -> bool:
        tool = None
        if part.kind == "tool":  # the lines of a string in the tool's JSON (a description listing agents)
            try:
                tool = edits.get(body, path)
            except BadRecord:
                return False
            text, m = _tool_text(tool, part)
            sep = JSON_BREAK
        else:
            try:
                text = edits.get_text(body, path)
            except BadRecord:
                return False
            m = part.pattern().match(text)
            sep = "\n"
        if m is None:
            self.unmatched[plan.template.id] = self.unmatched.get(plan.template.id, 0) + 1
            return False
        new = text
        for first, last in sorted(runs, key=lambda r: m.start(r[0] + 1), reverse=True):
            a = line_span(text, m.span(first + 1), sep)[0]
            b = line_span(text, m.span(last + 1), sep)[1]
            new = new[:a] + sort_lines(a, b, text, sep) + new[b:]
        if new == text:
            return False
        if tool is None:
            edits.set_text(body, path, new)
            return True
        try:
            sorted_tool = json.loads(new)
        except ValueError:
            return False
        return _set_strings(tool, sorted_tool)

    @staticmethod
    def _newest_turn(req: Request) -> tuple[str, int] | None:
        conv = conversation(req)
        for p in reversed(conv):
            if p.role in ("user", "tool", "function") or p.kind == "tool_result":
                return edits.message_of(p.path)
        return None

    def _append(self, plan: Plan, body: dict[str, Any], req: Request, text: str) -> bool:
        where = self._newest_turn(req)
        if where is None:
            return False
        try:
            edits.append_text(body, plan.api, where, text)
        except BadRecord:
            return False
        return True

    def _summaries_last(self, plan: Plan, body: dict[str, Any]) -> bool:
        changed = False
        for path in plan.summaries:
            st = edits.steps(path)
            if plan.api in ("anthropic", "converse") and st[:1] == ["system"] and len(st) == 2 \
                    and isinstance(body.get("system"), list):
                blocks = body["system"]
                if st[1] < len(blocks) - 1:
                    blocks.append(blocks.pop(st[1]))
                    changed = True
            elif plan.api == "chat" and st[:1] == ["messages"] and isinstance(body.get("messages"), list):
                msgs = body["messages"]
                i = st[1]
                j = i
                while j + 1 < len(msgs) and isinstance(msgs[j + 1], dict) and msgs[j + 1].get("role") in ("system", "developer"):
                    j += 1
                if j > i:
                    msgs.insert(j, msgs.pop(i))
                    changed = True
        return changed

    def _keep_history(self, plan: Plan, body: dict[str, Any], key: tuple[str, ...], msgs: list[Any],
                      skip: int | None) -> bool:
        """Send the predecessor's proposed history with this request's new messages after it,
        while that stays within :data:`~.history.GROWTH` times the history the log sent; else
        the log's own (a cut). ``msgs``: the request's conversation messages as logged;
        ``skip``: the position of an inserted message taken out of the body already."""
        core = msgs if skip is None else msgs[:skip] + msgs[skip + 1:]
        hashes = [message_hash(ps) for _, ps in core]
        found = self.histories.find(hashes, key)
        where = edits.message_of(core[0][1][0].path) if core else None
        lst = body.get(where[0]) if where is not None else None
        start = min((m for m, _ in msgs if m is not None), default=None)
        if not isinstance(lst, list) or start is None or len(lst) - start != len(core):
            self.histories.remember(hashes, key, Tip(None, hashes), found)
            return False
        own = lst[start:]
        chosen = own
        added = len(own)
        if found is not None and found.tip.messages is not None and found.trim <= found.tip.added:
            kept = found.tip.messages[:len(found.tip.messages) - found.trim]
            carried = copy_record(kept)
            if plan.api == "anthropic":
                edits.strip_breakpoints({"messages": carried})
            grown = carried + own[found.new:]
            if history_size(grown) <= GROWTH * history_size(own):
                chosen, added = grown, len(own) - found.new
        self.histories.remember(hashes, key, Tip(copy_record(chosen), hashes, added), found)
        if chosen is own:
            return False
        lst[start:] = chosen
        return True

    # -- 5: breakpoints ---------------------------------------------------------------------

    def _place_breakpoints(self, plan: Plan, body: dict[str, Any], req: Request) -> bool:
        """Mark the anchor, the newest stable block and the window behind it; True if the body
        changed."""
        limits = plan.limits
        if limits is None:
            return False
        parts = list(req.parts)
        n_reg = len(region(req))
        anchor = self._anchor(plan, req)
        # the newest block, the text a plan appended included: later requests re-send it as it
        # is (:meth:`_carry`), so it is stable content for the next turn
        newest = len(parts) - 1 if plan.conversational and len(parts) > n_reg else None
        if plan.api == "converse":
            tools = converse_caches_tools(req.model)
            marks = place(len(parts), anchor, newest, limits, lambda i: edits.converse_markable(body, parts[i].path, tools))
        else:
            marks = place(len(parts), anchor, newest, limits, lambda i: edits.markable(body, parts[i].path))
        before = json.dumps(body, sort_keys=True)
        life = plan.lifetime or {}
        default = plan.marker_ttl

        def ttl_of(i: int) -> str | None:
            level = "anchor_ttl" if anchor is not None and i <= anchor else "window_ttl"
            ttl = life.get(level, default) if plan.active("lifetime") else default
            return ttl if ttl != "5m" else None

        if plan.api == "converse":
            try:
                edits.converse_checkpoints(body, [(parts[i].path, ttl_of(i)) for i in sorted(marks)])
            except BadRecord:
                return False
            return json.dumps(body, sort_keys=True) != before
        edits.strip_breakpoints(body)
        for i in sorted(marks, reverse=True):
            try:
                edits.mark(body, parts[i].path, ttl_of(i))
            except BadRecord:
                continue
        return json.dumps(body, sort_keys=True) != before

    def _anchor(self, plan: Plan, req: Request) -> int | None:
        """Index of the anchor: the last part of the template's stable region, extended over the
        conversation head most requests share when this request starts with it."""
        from .observe import head_chain

        reg = region(req)
        order = self._region_order if len(self._region_order) == len(reg) else [p.path for p in reg]
        anchor = None
        for i, path in enumerate(order):
            if not self._stable(plan, path):
                return anchor
            anchor = i
        if plan.head is not None:
            n, h = plan.head
            chain = head_chain(req, self.key_of_plan(plan), n)
            if len(chain) == n and chain[-1] == h:
                anchor = len(reg) + n - 1
        return anchor

    def key_of_plan(self, plan: Plan) -> tuple[str, ...]:
        """The template key of a plan."""
        return plan.template.key

    def _stable(self, plan: Plan, path: str) -> bool:
        if path.startswith("tools"):
            return plan.stable.get(path, True) or plan.sort_tools or plan.canonical
        return plan.stable.get(path, path not in plan.summaries)

    def _set_ttls(self, plan: Plan, body: dict[str, Any]) -> bool:
        """The lifetime's TTLs on the log's own breakpoints: the anchor's on tools and system,
        the conversation's on message blocks."""
        life = plan.lifetime or {}
        changed = False
        for section, ttl in (("tools", life.get("anchor_ttl")), ("system", life.get("anchor_ttl")),
                             ("messages", life.get("window_ttl"))):
            if ttl is None:
                continue
            if plan.api == "converse":
                changed |= edits.converse_set_ttl(body, section, None if ttl == "5m" else ttl) > 0
                continue
            v = body.get(section)
            if isinstance(v, (list, dict)):
                holder = {"x": v}
                if ttl == "5m":
                    n = _drop_ttl(holder)
                else:
                    n = edits.set_ttl(holder, ttl)
                changed |= n > 0
        return changed


def _tool_text(tool: Any, part: Any) -> tuple[str, Any]:
    """A body's tool as the JSON text its template part matches (as logged, else as the readers
    write it: sorted keys, no ``cache_control``), and the match (``None``: neither matches)."""
    from ..ingest.common import stable_json

    text = json.dumps(tool, ensure_ascii=False, separators=(",", ":"))
    m = part.pattern().match(text)
    if m is None and isinstance(tool, dict):
        text = stable_json({k: v for k, v in tool.items() if k != "cache_control"})
        m = part.pattern().match(text)
    return text, m


def _set_strings(target: Any, source: Any) -> bool:
    """Set every string of ``target`` to the one at the same place in ``source`` (the same JSON
    value with some strings changed), keeping ``target``'s own key order; returns whether a
    string changed."""
    changed = False
    if isinstance(target, dict) and isinstance(source, dict):
        for k, v in target.items():
            if k not in source:
                continue
            if isinstance(v, str) and isinstance(source[k], str):
                if v != source[k]:
                    target[k] = source[k]
                    changed = True
            else:
                changed |= _set_strings(v, source[k])
    elif isinstance(target, list) and isinstance(source, list) and len(target) == len(source):
        for i, v in enumerate(target):
            if isinstance(v, str) and isinstance(source[i], str):
                if v != source[i]:
                    target[i] = source[i]
                    changed = True
            else:
                changed |= _set_strings(v, source[i])
    return changed


def _block(slot: Any, value: str) -> bool:
    """Whether a slot's value is a conditional block: other requests of the template render
    nothing there, and the value holds a line break (a note appended to a description, a line
    rendered under a condition). It moves exactly as it is, so the text left is the text those
    requests carry (:func:`~.spans.take`)."""
    return slot.optional and "\n" in value and bool(value.strip())


def converse_caches_tools(model: str | None) -> bool:
    """Whether a Bedrock model takes a checkpoint in ``toolConfig`` (Claude: yes; Amazon Nova:
    no), from ``checkpoint_sections`` in rules/providers/bedrock.yaml (source:
    https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html, checked 2026-12-01)."""
    from ..simulate.rules import load_providers

    return "tools" in load_providers()["bedrock"].rules_for(model).checkpoint_sections


def c_count(holder: tuple[Any, Any], raw: str) -> int:
    """How often ``raw`` occurs in the string at ``holder``."""
    c, k = holder
    return c[k].count(raw)


def _drop_ttl(v: Any) -> int:
    """Set every ``cache_control`` under ``v`` to the default 5-minute TTL; returns how many
    changed."""
    n = 0
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            cc = x.get("cache_control")
            if isinstance(cc, dict) and "ttl" in cc:
                del cc["ttl"]
                n += 1
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return n
