"""Texts that are no number written in ASCII digits, which every reader of a count, an index or
a length must refuse: some that `str.isdigit` takes for digits, and some of plain ASCII."""

# `str.isdigit` is true of each; `int` refuses some and reads others as a number nobody wrote.
UNICODE_DIGITS = {
    "superscript-two": "²",
    "circled-one": "①",
    "arabic-indic-three": "٣",
    "fullwidth-one": "\uff11",
    "digit-then-superscript": "1²",
}
# ASCII, but no count: nothing, a sign, a space, an exponent.
NOT_DIGITS = {"empty": "", "sign": "-1", "space": " 1", "exponent": "1e3"}
