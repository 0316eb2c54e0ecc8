"""`literal_comparisons`: the plain `path <op> literal` comparisons of an expression, either
way round, with the literal's kind; other shapes are not reported."""

from weir.expressions import Comparison, LiteralKind, literal_comparisons


def test_each_plain_comparison_is_found_either_way_round() -> None:
    found = literal_comparisons(
        "status == 'FAILED' && 3 < attempt && event.data.x != 2.5 && e.y >= b'z' && n == null"
    )
    assert set(found) == {
        Comparison(("status",), "==", "'FAILED'", LiteralKind.STRING),
        Comparison(("attempt",), "<", "3", LiteralKind.INT),
        Comparison(("event", "data", "x"), "!=", "2.5", LiteralKind.DOUBLE),
        Comparison(("e", "y"), ">=", "b'z'", LiteralKind.BYTES),
        Comparison(("n",), "==", "null", LiteralKind.NULL),
    }


def test_other_shapes_are_not_reported() -> None:
    assert literal_comparisons("a + 1 == 2 || f(a) == 1 || a[0] == 1 || a == b || 1 == 2") == []
    assert [c.kind for c in literal_comparisons("x == 7u || x == true")] in (
        [LiteralKind.BOOL, LiteralKind.UINT],
        [LiteralKind.UINT, LiteralKind.BOOL],
    )
