-- svg.lua - a self-contained interactive SVG flame graph of a profile: "all"
-- at the bottom, then one frame per process (comm), in per-thread profiles
-- one per thread ("tid-1234 (worker)"), then the stack frames root to leaf
-- upwards, widths proportional to value. The embedded script
-- (no external resources) shows details on hover, zooms on click and
-- searches by regular expression (Search control, Ctrl-F or "/").
local folded = require("moonrover.profiler.writers.folded")
local utf8_length = require("moonrover.lib.utf8").length

local _M = {}

local WIDTH = 1200         -- image width, px
local PAD = 10             -- left and right margins, px
local FRAME_H = 16         -- row height, px (rects are one px shorter)
local TOP = 56             -- room for title, subtitle and controls, px
local BOTTOM = 34          -- room for the details line, px
local CHAR_W = 7.2         -- width of one 12px monospace character, px
local MIN_SHARE = 0.001    -- frames narrower than this share are omitted
local MAX_FRAMES = 10000   -- at most this many frames, whatever the profile
local MAX_NAME = 500       -- names longer than this many bytes are cut

-- Tree --------------------------------------------------------------------

local function new_node(name, kind)
  return { name = name, kind = kind, v = 0 }
end

-- Children are keyed by name, with the kind appended unless it is "user".
local function child(node, name, kind)
  local kids = node.kids
  if not kids then
    kids = {}
    node.kids = kids
  end
  local key = kind == "user" and name or name .. "\0" .. kind
  local c = kids[key]
  if not c then
    c = new_node(name, kind)
    kids[key] = c
  end
  return c
end

local function add_stack(root, stack, v)
  root.v = root.v + v
  local node = child(root, tostring(stack.comm or "?"), "process")
  node.v = node.v + v
  local thread = folded.thread_frame(stack)
  if thread then
    node = child(node, thread, "process")
    node.v = node.v + v
  end
  local kinds = stack.kinds or {}
  for i, name in ipairs(stack.frames or {}) do
    node = child(node, tostring(name), kinds[i] or "user")
    node.v = node.v + v
  end
end

local function build_tree(stacks, meta)
  local root = new_node("all", "root")
  for _, stack in ipairs(stacks) do
    local v = math.floor(folded.value_of(stack, meta) + 0.5)
    if v > 0 then add_stack(root, stack, v) end
  end
  return root
end

local function sorted_kids(node)
  local list = {}
  for _, c in pairs(node.kids or {}) do list[#list + 1] = c end
  table.sort(list, function(a, b)
    if a.name ~= b.name then return a.name < b.name end
    return a.kind < b.kind
  end)
  return list
end

local function collect_values(node, min, out)
  if node.v < min then return end
  out[#out + 1] = node.v
  for _, c in pairs(node.kids or {}) do collect_values(c, min, out) end
end

-- The smallest value a frame needs to be drawn: MIN_SHARE of the total,
-- raised if needed so that at most MAX_FRAMES frames are drawn. A child
-- never exceeds its parent, so the drawn frames always form a tree.
local function threshold(root)
  local min = math.max(root.v * MIN_SHARE, 1)
  local values = {}
  collect_values(root, min, values)
  if #values <= MAX_FRAMES then return min end
  table.sort(values, function(a, b) return a > b end)
  return values[MAX_FRAMES + 1] + 0.5
end

-- Text --------------------------------------------------------------------

-- Replaces each byte that is not part of valid UTF-8 with '?'.
local function valid_utf8(s)
  if not s:find("[\128-\255]") then return s end
  local out, i = {}, 1
  while i <= #s do
    local b = s:byte(i)
    local n = b < 0x80 and 1 or utf8_length(s, i)
    out[#out + 1] = n and s:sub(i, i + n - 1) or "?"
    i = i + (n or 1)
  end
  return table.concat(out)
end

-- Drops a partial UTF-8 sequence left at the end of s by a byte cut.
local function trim_partial(s)
  local tail = s:match("[\192-\255][\128-\191]*$")
  if tail and not utf8_length(tail, 1) then return s:sub(1, #s - #tail) end
  return s
end

-- A name as the SVG shows it: valid UTF-8 without control characters,
-- at most MAX_NAME bytes.
local function display_name(name)
  name = valid_utf8((name:gsub("%c", " ")))
  if #name > MAX_NAME then name = trim_partial(name:sub(1, MAX_NAME)) .. "..." end
  return name
end

local ESCAPES = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                  ['"'] = "&quot;", ["'"] = "&apos;" }

local function escape(s)
  return (s:gsub("[&<>\"']", ESCAPES))
end

-- The label that fits a frame w px wide: the name, cut with "..", or "".
local function label(name, w)
  local n = math.floor((w - 6) / CHAR_W)
  if n < 3 then return "" end
  local chars = {}
  for ch in name:gmatch("[^\128-\191][\128-\191]*") do
    chars[#chars + 1] = ch
    if #chars > n then break end
  end
  if #chars <= n then return name end
  return table.concat(chars, "", 1, n - 2) .. ".."
end

local function group_digits(v)
  local s = string.format("%.0f", v):reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (s:gsub("^,", ""))
end

local function format_amount(v, meta)
  if folded.uses_nanos(meta) then
    local ms = v / 1e6
    return string.format(ms >= 0.1 and "%.1f ms" or "%.3f ms", ms)
  end
  return group_digits(v) .. (v == 1 and " sample" or " samples")
end

-- Colours -----------------------------------------------------------------

local function hash(s)
  local h = 5381
  for i = 1, #s do h = (h * 33 + s:byte(i)) % 4294967296 end
  return h
end

-- base and span of red, green, blue per kind of frame
local PALETTES = {
  user = { 205, 50, 80, 120, 30, 45 },      -- warm: red, orange, yellow
  kernel = { 70, 50, 140, 60, 200, 55 },    -- blue
  jit = { 60, 60, 175, 60, 65, 50 },        -- green
  unknown = { 165, 40, 165, 40, 165, 40 },  -- grey
  process = { 175, 40, 140, 35, 215, 35 },  -- violet
  root = { 210, 0, 210, 0, 210, 0 },        -- light grey
}

local function colour(name, kind)
  local p = PALETTES[kind] or PALETTES.unknown
  local h = hash(name)
  local a, b, c = h % 256, math.floor(h / 256) % 256, math.floor(h / 65536) % 256
  if kind == "unknown" then b, c = a, a end
  return string.format("#%02x%02x%02x", p[1] + math.floor(p[2] * a / 255),
                       p[3] + math.floor(p[4] * b / 255), p[5] + math.floor(p[6] * c / 255))
end

-- Frames ------------------------------------------------------------------

local function frame_svg(f, y, scale, total, meta)
  local node, x, w = f.node, PAD + f.offset * scale, f.node.v * scale
  local name = display_name(node.name)
  local info = string.format("%s (%s, %.2f%%)", name, format_amount(node.v, meta),
                             node.v * 100 / total)
  return string.format(
    '<g data-o="%.0f" data-v="%.0f"><title>%s</title>' ..
    '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>' ..
    '<text x="%.2f" y="%.1f">%s</text></g>\n',
    f.offset, node.v, escape(info), x, y, w, FRAME_H - 1,
    colour(node.name, node.kind), x + 3, y + 11.5, escape(label(name, w)))
end

-- The drawn frames in drawing order, each with its depth and its offset
-- (in value units) from the left edge; and the number of rows they fill.
local function layout(root)
  local list, rows = {}, 0
  if root.v <= 0 then return list, rows end
  local min = threshold(root)
  local function visit(node, depth, offset)
    if node.v < min then return end
    rows = math.max(rows, depth + 1)
    list[#list + 1] = { node = node, depth = depth, offset = offset }
    for _, c in ipairs(sorted_kids(node)) do
      visit(c, depth + 1, offset)
      offset = offset + c.v
    end
  end
  visit(root, 0, 0)
  return list, rows
end

local function frames_svg(list, height, total, meta)
  local out = {}
  local scale = total > 0 and (WIDTH - 2 * PAD) / total or 0
  for i, f in ipairs(list) do
    out[i] = frame_svg(f, height - BOTTOM - (f.depth + 1) * FRAME_H, scale, total, meta)
  end
  return table.concat(out)
end

-- Document ----------------------------------------------------------------

local STYLE = [[
<style type="text/css"><![CDATA[
  text { font-family: monospace; font-size: 12px; fill: #000; }
  #title { font-size: 17px; }
  #subtitle, #details, #matched { fill: #333; }
  .ctl { fill: #1a4d99; cursor: pointer; }
  .ctl:hover { text-decoration: underline; }
  .hidden { display: none; }
  #frames g { cursor: pointer; }
  #frames rect { stroke: #f8f8f4; stroke-width: 0.4; }
  #frames text { pointer-events: none; }
  #frames g:hover rect { stroke: #222; stroke-width: 0.6; }
  #frames g.ancestor rect { opacity: 0.55; }
]] .. "]]></style>\n"

-- The embedded viewer; reads layout constants from the root element.
local SCRIPT = [[
<script type="text/ecmascript"><![CDATA[
(function () {
  "use strict";
  var svg = document.documentElement;
  var width = +svg.getAttribute("data-width");
  var pad = +svg.getAttribute("data-pad");
  var charW = +svg.getAttribute("data-charw");
  var total = +svg.getAttribute("data-total");
  var details = document.getElementById("details");
  var matched = document.getElementById("matched");
  var resetCtl = document.getElementById("reset");
  var clearCtl = document.getElementById("clear");
  var frames = [];
  var lastQuery = "";

  function readFrame(g) {
    var title = g.getElementsByTagName("title")[0].textContent;
    var rect = g.getElementsByTagName("rect")[0];
    return {
      g: g, rect: rect, text: g.getElementsByTagName("text")[0],
      info: title, name: title.substring(0, title.lastIndexOf(" (")),
      o: +g.getAttribute("data-o"), v: +g.getAttribute("data-v"),
      y: +rect.getAttribute("y"), fill: rect.getAttribute("fill")
    };
  }

  function fitLabel(name, w) {
    var n = Math.floor((w - 6) / charW);
    if (n < 3) { return ""; }
    return name.length <= n ? name : name.substring(0, n - 2) + "..";
  }

  function place(f, x, w, cls) {
    f.rect.setAttribute("x", x.toFixed(2));
    f.rect.setAttribute("width", w.toFixed(2));
    f.text.setAttribute("x", (x + 3).toFixed(2));
    f.text.textContent = fitLabel(f.name, w);
    f.g.setAttribute("class", cls);
  }

  function zoom(z) {
    var scale = (width - 2 * pad) / z.v;
    frames.forEach(function (f) {
      var inside = f.o >= z.o && f.o + f.v <= z.o + z.v;
      var around = f.o <= z.o && f.o + f.v >= z.o + z.v;
      if (f.y <= z.y && inside) {
        place(f, pad + (f.o - z.o) * scale, f.v * scale, "");
      } else if (f.y > z.y && around) {
        place(f, pad, width - 2 * pad, "ancestor");
      } else {
        f.g.setAttribute("class", "hidden");
      }
    });
    resetCtl.setAttribute("class", z.o === 0 && z.v === total ? "ctl hidden" : "ctl");
  }

  function resetZoom() {
    if (frames.length > 0) { zoom(frames[0]); }
  }

  function matchedShare(spans) {
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var sum = 0, end = -1;
    spans.forEach(function (s) {
      if (s[1] <= end) { return; }
      sum += s[1] - Math.max(s[0], end);
      end = s[1];
    });
    return total > 0 ? 100 * sum / total : 0;
  }

  function search(query) {
    var re;
    try { re = query ? new RegExp(query) : null; } catch (e) {
      matched.textContent = "Invalid regular expression";
      return;
    }
    var spans = [];
    frames.forEach(function (f) {
      var hit = re !== null && re.test(f.name);
      f.rect.setAttribute("fill", hit ? "#e040e0" : f.fill);
      if (hit) { spans.push([f.o, f.o + f.v]); }
    });
    lastQuery = query || "";
    matched.textContent = re ? "Matched: " + matchedShare(spans).toFixed(1) + "%" : "";
    clearCtl.setAttribute("class", re ? "ctl" : "ctl hidden");
  }

  function askSearch() {
    var query = window.prompt("Search frames (regular expression):", lastQuery);
    if (query !== null) { search(query); }
  }

  function frameOf(evt) {
    var g = evt.target.closest ? evt.target.closest("#frames > g") : null;
    return g ? frames[+g.getAttribute("data-i")] : null;
  }

  var groups = document.getElementById("frames").getElementsByTagName("g");
  for (var i = 0; i < groups.length; i++) {
    groups[i].setAttribute("data-i", i);
    frames.push(readFrame(groups[i]));
  }
  var area = document.getElementById("frames");
  area.addEventListener("mouseover", function (evt) {
    var f = frameOf(evt);
    if (f) { details.textContent = f.info; }
  });
  area.addEventListener("mouseout", function () { details.textContent = " "; });
  area.addEventListener("click", function (evt) {
    var f = frameOf(evt);
    if (f) { zoom(f); }
  });
  resetCtl.addEventListener("click", resetZoom);
  document.getElementById("search").addEventListener("click", askSearch);
  clearCtl.addEventListener("click", function () { search(""); });
  window.addEventListener("keydown", function (evt) {
    var ctrlF = (evt.ctrlKey || evt.metaKey) && (evt.key === "f" || evt.key === "F");
    if (ctrlF || evt.key === "/") { evt.preventDefault(); askSearch(); }
    if (evt.key === "Escape") { search(""); resetZoom(); }
  });
})();
]] .. "]]></script>\n"

local function header(meta, height, total)
  local title = escape(display_name(tostring(meta.title or "Flame Graph")))
  local parts = {
    '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
    string.format('<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" ' ..
                  'height="%d" viewBox="0 0 %d %d" data-width="%d" data-pad="%d" ' ..
                  'data-charw="%s" data-total="%.0f">\n',
                  WIDTH, height, WIDTH, height, WIDTH, PAD, CHAR_W, total),
    STYLE,
    string.format('<rect id="background" x="0" y="0" width="%d" height="%d" fill="#f8f8f4"/>\n',
                  WIDTH, height),
    string.format('<text id="title" x="%d" y="24" text-anchor="middle">%s</text>\n',
                  WIDTH / 2, title),
    string.format('<text id="reset" class="ctl hidden" x="%d" y="24">Reset zoom</text>\n', PAD),
    string.format('<text id="search" class="ctl" x="%d" y="24" text-anchor="end">Search</text>\n',
                  WIDTH - PAD),
    string.format('<text id="clear" class="ctl hidden" x="%d" y="24" text-anchor="end">' ..
                  'Clear</text>\n', WIDTH - PAD - 60),
  }
  if meta.subtitle then
    parts[#parts + 1] = string.format('<text id="subtitle" x="%d" y="44" text-anchor="middle">' ..
                                      '%s</text>\n', WIDTH / 2,
                                      escape(display_name(tostring(meta.subtitle))))
  end
  return table.concat(parts)
end

local function footer(height)
  return string.format('<text id="details" x="%d" y="%d"> </text>\n' ..
                       '<text id="matched" x="%d" y="%d" text-anchor="end"></text>\n',
                       PAD, height - 12, WIDTH - PAD, height - 12)
end

local function empty_note(rows)
  if rows > 0 then return "" end
  return string.format('<text id="empty" x="%d" y="%d" text-anchor="middle">' ..
                       'No samples were collected.</text>\n', WIDTH / 2, TOP + FRAME_H * 2)
end

-- The SVG document of a profile.
function _M.render(stacks, meta)
  meta = meta or {}
  local root = build_tree(stacks, meta)
  local list, rows = layout(root)
  local height = TOP + math.max(rows, 3) * FRAME_H + BOTTOM
  return table.concat({
    header(meta, height, root.v), empty_note(rows),
    '<g id="frames">\n', frames_svg(list, height, root.v, meta), '</g>\n',
    footer(height), SCRIPT, "</svg>\n",
  })
end

function _M.write(stacks, meta, fh)
  fh:write(_M.render(stacks, meta))
end

return _M
