"""English irregular verb forms and noun plurals (hand-written; common general-English list), for the "irregular
morphology" experiment of benchmarks/recall_tune.py.

Fixed from the first draft, before any measurement: the auxiliaries be / do /
have leave (their forms are rank stop words: was, did, had, ...); "lie lay lain" loses "lay" (also the verb "lay
laid laid": one form in two groups); "leaf leaves" and "life lives" leave (porter stems
"leaves" and "lives" as the verbs "leave" and "live").
"""
VERBS = """
arise arose arisen|awake awoke awoken|bear bore born borne|beat beat beaten|become became become|
begin began begun|bend bent bent|bet bet bet|bind bound bound|bite bit bitten|bleed bled bled|blow blew blown|
break broke broken|breed bred bred|bring brought brought|build built built|burn burnt burnt|buy bought bought|
catch caught caught|choose chose chosen|cling clung clung|come came come|cost cost cost|creep crept crept|
cut cut cut|deal dealt dealt|dig dug dug|draw drew drawn|dream dreamt dreamt|drink drank drunk|
drive drove driven|eat ate eaten|fall fell fallen|feed fed fed|feel felt felt|fight fought fought|find found found|
flee fled fled|fly flew flown|forbid forbade forbidden|forget forgot forgotten|forgive forgave forgiven|
freeze froze frozen|get got gotten|give gave given|go went gone|grind ground ground|grow grew grown|hang hung hung|
hear heard heard|hide hid hidden|hit hit hit|hold held held|hurt hurt hurt|keep kept kept|
kneel knelt knelt|know knew known|lay laid laid|lead led led|lean leant leant|leap leapt leapt|learn learnt learnt|
leave left left|lend lent lent|let let let|lie lain|light lit lit|lose lost lost|make made made|mean meant meant|
meet met met|pay paid paid|put put put|quit quit quit|read read read|ride rode ridden|ring rang rung|rise rose risen|
run ran run|say said said|see saw seen|seek sought sought|sell sold sold|send sent sent|set set set|sew sewed sewn|
shake shook shaken|shine shone shone|shoot shot shot|show showed shown|shrink shrank shrunk|shut shut shut|
sing sang sung|sink sank sunk|sit sat sat|sleep slept slept|slide slid slid|speak spoke spoken|speed sped sped|
spend spent spent|spin spun spun|spread spread spread|spring sprang sprung|stand stood stood|steal stole stolen|
stick stuck stuck|sting stung stung|strike struck struck|swear swore sworn|sweep swept swept|swim swam swum|
swing swung swung|take took taken|teach taught taught|tear tore torn|tell told told|think thought thought|
throw threw thrown|understand understood understood|wake woke woken|wear wore worn|weave wove woven|weep wept wept|
win won won|wind wound wound|write wrote written|overcome overcame overcome|undertake undertook undertaken|
withdraw withdrew withdrawn|upset upset upset|mislead misled misled|oversee oversaw overseen
"""
NOUNS = """
child children|man men|woman women|person people|foot feet|tooth teeth|mouse mice|goose geese|wife wives|
knife knives|wolf wolves|half halves|shelf shelves|thief thieves|loaf loaves
"""


def groups() -> list[list[str]]:
    """The groups: each a list of distinct forms, base first."""
    out = []
    for line in (VERBS + NOUNS).replace("\n", "").split("|"):
        ws = line.split()
        if ws:
            out.append(list(dict.fromkeys(ws)))
    return out
