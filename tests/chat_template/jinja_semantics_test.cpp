// Jinja2 semantics, case by case. Every expected string below is what Python's Jinja2 3.1
// renders with transformers' configuration (ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, loopcontrols, its tojson, raise_exception and
// strftime_now pinned at 2026-01-15 12:00:00 UTC), except that list.append and friends,
// which that sandbox forbids, were allowed when generating these cases.
#include <gtest/gtest.h>

#include <string>

#include "chat_template/chat_template.h"

namespace {

struct Case {
  const char* source;
  const char* vars;  // JSON object of template variables
  const char* expected;
};

const Case
    kCases
        [] =
            {
                {R"J({{ 1.0 }}|{{ 1e16 }}|{{ 1.5e-7 }}|{{ 0.1 + 0.2 }}|{{ 1/3 }}|{{ 10/2 }}|{{ -0.0 }}|{{ 123456789012345678.0 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 0.00001 }})J",
                 R"J({})J",
                 R"J(1.0|1e+16|1.5e-07|0.30000000000000004|0.3333333333333333|5.0|-0.0|1.2345678901234568e+17|1000000000000000.0|0.0001|1e-05)J"},
                {R"J({{ none }}|{{ None }}|{{ true }}|{{ False }}|{{ undefined_thing }}|{{ [1, 'a', none, true, 1.5] }}|{{ {'a': 1, 'b': [2]} }}|{{ (1,) }}|{{ () }}|{{ (1, 'x') }})J",
                 R"J({})J",
                 R"J(None|None|True|False||[1, 'a', None, True, 1.5]|{'a': 1, 'b': [2]}|(1,)|()|(1, 'x'))J"},
                {R"J({{ "it's" }}|{{ ["it's", 'say "hi"', 'both \' and "', 'tab\there', 'nl\n', 'uni é 🦙', '\x01', '\\'] }})J",
                 R"J({})J",
                 R"J(it's|["it's", 'say "hi"', 'both \' and "', 'tab\there', 'nl\n', 'uni é 🦙', '\x01', '\\'])J"},
                {R"J({{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2 ** 3 ** 2 }}|{{ 7.5 // 2 }}|{{ -7.5 % 2 }}|{{ 3 * 'ab' }}|{{ 'ab' * 3 }}|{{ [1] * 3 }})J",
                 R"J({})J", R"J(3|-4|1|2|-2|1024|0.5|64|3.0|0.5|ababab|ababab|[1, 1, 1])J"},
                {R"J({{ 'a' ~ 1 ~ none ~ true ~ 1.5 ~ [1] }}|{{ 'a' + 'b' }}|{{ [1] + [2] }}|{{ -5 }}|{{ +5 }}|{{ - -5 }}|{{ not 1 }}|{{ not none }})J",
                 R"J({})J", R"J(a1NoneTrue1.5[1]|ab|[1, 2]|-5|5|5|False|True)J"},
                {R"J({{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 1 == 1.0 }}|{{ true == 1 }}|{{ 'a' < 'b' }}|{{ [1,2] < [1,3] }}|{{ 'a' in 'cat' }}|{{ 2 in [1,2] }}|{{ 'k' in {'k': 1} }}|{{ 'z' not in 'abc' }})J",
                 R"J({})J", R"J(True|False|True|True|True|True|True|True|True|True)J"},
                {R"J({{ 1 if true else 2 }}|{{ 1 if false else 2 }}|{{ 1 if false }}|{{ 'x' if none else 'y' }})J",
                 R"J({})J", R"J(1|2||y)J"},
                {R"J({{ 'hello'[1:3] }}|{{ 'hello'[::-1] }}|{{ 'hello'[-2:] }}|{{ [1,2,3,4,5][::2] }}|{{ [1,2,3,4,5][4:1:-1] }}|{{ [1,2,3][-1] }}|{{ 'héllo'[1] }}|{{ [1,2,3][10] }}|{{ 'abc'[:-1] }}|{{ [1,2,3][-10:10] }}|{{ 'abcdef'[-1:-4:-1] }})J",
                 R"J({})J", R"J(el|olleh|lo|[1, 3, 5]|[5, 4, 3]|3|é||ab|[1, 2, 3]|fed)J"},
                {R"J({{ 'a,b,,c'.split(',') }}|{{ '  a  b  '.split() }}|{{ 'a b c'.split(none, 1) }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ '  a b  '.rsplit(None, 1) }}|{{ ''.split() }}|{{ ''.split(',') }})J",
                 R"J({})J",
                 R"J(['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a', 'b,c']|['a,b', 'c']|['  a', 'b']|[]|[''])J"},
                {R"J({{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\n\nhi\n'.lstrip('\n') }}|{{ 'hi\n\n'.rstrip() }}|{{ 'abc'.upper() }}|{{ 'ABC'.lower() }}|{{ 'hello world'.title() }}|{{ "they're bill's" .title() }}|{{ 'hELLO'.capitalize() }})J",
                 R"J({})J",
                 R"J(x|hi|hi
|hi|ABC|abc|Hello World|They'Re Bill'S|Hello)J"},
                {R"J({{ 'abc'.startswith('a') }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abc'.endswith('bc') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'abc'.find('c') }}|{{ 'abc'.find('z') }}|{{ 'aXbXc'.count('X') }}|{{ '-'.join(['a', 'b']) }}|{{ '{} {}'.format(1, 'x') }}|{{ '{0}{1}{0}'.format('a','b') }}|{{ '{name}!'.format(name='bob') }})J",
                 R"J({})J", R"J(True|True|True|bba|2|-1|2|a-b|1 x|aba|bob!)J"},
                {R"J({{ 'abc' | upper }}|{{ 'hello world' | title }}|{{ "they're bill's" | title }}|{{ '  x ' | trim }}|{{ 'xxax' | trim('x') }}|{{ [3,1,2] | sort }}|{{ [3,1,2] | sort(reverse=true) }}|{{ ['b','A','c'] | sort }}|{{ ['b','A','c'] | sort(case_sensitive=true) }})J",
                 R"J({})J",
                 R"J(ABC|Hello World|They're Bill's|x|a|[1, 2, 3]|[3, 2, 1]|['A', 'b', 'c']|['A', 'b', 'c'])J"},
                {R"J({{ [1,2,3] | join(', ') }}|{{ [1,2,3] | join }}|{{ 'abc' | join('-') }}|{{ [1,2,3] | first }}|{{ [1,2,3] | last }}|{{ [] | first }}|{{ 'abc' | first }}|{{ [1,2,3] | length }}|{{ 'héllo' | length }}|{{ {'a':1} | length }}|{{ [1,2] | count }})J",
                 R"J({})J", R"J(1, 2, 3|123|a-b-c|1|3||a|3|5|1|2)J"},
                {R"J({{ [1,2,3] | sum }}|{{ [1,2,3] | min }}|{{ [1,2,3] | max }}|{{ ['b','A'] | min }}|{{ [1,1,2,'a','A'] | unique | list }}|{{ [1,2,3] | reverse | list }}|{{ 'abc' | reverse }}|{{ {'b':1,'a':2} | dictsort }}|{{ {'b':1,'a':2} | items | list }})J",
                 R"J({})J",
                 R"J(6|1|3|A|[1, 2, 'a']|[3, 2, 1]|cba|[('a', 2), ('b', 1)]|[('b', 1), ('a', 2)])J"},
                {R"J({{ 42 | string }}|{{ '42' | int + 1 }}|{{ '4.7' | int }}|{{ 'x' | int }}|{{ 'x' | int(7) }}|{{ '3.5' | float }}|{{ 3 | float }}|{{ -3 | abs }}|{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 2.567 | round(2) }}|{{ 2.567 | round(1, 'floor') }}|{{ 7 | round }})J",
                 R"J({})J", R"J(42|43|4|0|7|3.5|3.0|3|2.0|4.0|2.57|2.5|7)J"},
                {R"J({{ undefined_thing | default('d') }}|{{ none | default('d') }}|{{ '' | default('d') }}|{{ '' | default('d', true) }}|{{ 0 | d('z', boolean=true) }}|{{ undefined_thing | length }}|{{ undefined_thing | list }}|{{ undefined_thing | upper }})J", R"J({})J",
                 R"J(d|None||d|z|0|[]|)J"},
                {R"J({{ 'a\nb\n\nc' | indent }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent(2, blank=true) }}|{{ 'a\nb\n' | indent('> ') }}|{{ 'x' | center(7) }}|{{ 'hello world foo' | wordcount }}|{{ 'ab' | capitalize }}|{{ '%s-%d' | format('a', 3) }}|{{ '%05.1f|%-4s|%x' | format(3.14159, 'ab', 255) }})J",
                 R"J({})J",
                 R"J(a
    b

    c|  a
  b|a
  
  b|a
> b
|   x   |3|Ab|a-3|003.1|ab  |ff)J"},
                {R"J({{ [{'n': 'a', 'v': 1}, {'n': 'b', 'v': 2}] | map(attribute='n') | list }}|{{ ['a', 'b'] | map('upper') | list }}|{{ [1, 0, 2] | select | list }}|{{ [1, 2, 3, 4] | select('odd') | list }}|{{ [1, 2, 3, 4] | reject('even') | list }}|{{ [1,2,3] | select('greaterthan', 1) | list }})J",
                 R"J({})J", R"J(['a', 'b']|['A', 'B']|[1, 2]|[1, 3]|[1, 3]|[2, 3])J"},
                {R"J({{ [{'r': 'u'}, {'r': 'a'}, {'x': 1}] | selectattr('r', 'equalto', 'u') | list }}|{{ [{'r': 'u'}, {'r': 'a'}, {'x': 1}] | selectattr('r', 'defined') | list }}|{{ [{'r': 'u'}, {'r': ''}] | rejectattr('r') | list }}|{{ [{'t': 'b'}, {'t': 'a'}] | sort(attribute='t') | list }})J",
                 R"J({})J",
                 R"J([{'r': 'u'}]|[{'r': 'u'}, {'r': 'a'}]|[{'r': ''}]|[{'t': 'a'}, {'t': 'b'}])J"},
                {R"J({{ {'a': 1, 'b': [1, 'é', none, true, 1.5]} | tojson }}|{{ {'a': 1} | tojson(indent=2) }}|{{ [1, [2, {}], []] | tojson(indent=2) }}|{{ 'é"\n\t\u2028' | tojson }}|{{ 'é🦙' | tojson(ensure_ascii=True) }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ {'a': [1,2]} | tojson(separators=(',', ':')) }}|{{ 1.0 | tojson }}|{{ {1: 2, none: 3, true: 4} | tojson }})J",
                 R"J({})J",
                 R"J({"a": 1, "b": [1, "é", null, true, 1.5]}|{
  "a": 1
}|[
  1,
  [
    2,
    {}
  ],
  []
]|"é\"\n\t "|"\u00e9\ud83e\udd99"|{"a": 2, "b": 1}|{"a":[1,2]}|1.0|{"1": 4, "null": 3})J"},
                {R"J({% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('a', 'b') }};{% endfor %})J",
                 R"J({})J", R"J(1032TrueFalse32a;2121FalseFalse313b;3210FalseTrue32a;)J"},
                {R"J({% for x in [] %}a{% else %}empty{% endfor %}|{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.index }}{{ loop.last }}{% endfor %}|{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}|{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}|{% for c in 'héj' %}[{{ c }}]{% endfor %})J",
                 R"J({})J", R"J(empty|21False42True|a=1,b=2,|ab|[h][é][j])J"},
                {R"J({% for x in [1,2,3,4,5] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}|{% for x in [1,2] %}{% for y in 'ab' %}{{ x }}{{ y }}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %})J",
                 R"J({})J", R"J(13|1a11b212a12b22)J"},
                {R"J({% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}|{% set ns = namespace(c=0) %}{% for i in [1,2,3] %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}|{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set t = (1, 2) %}{{ t }})J",
                 R"J({})J", R"J(231|6|12|(1, 2))J"},
                {R"J({% macro m(a, b=2, c='x') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(1, c='y') }}|{{ m(a=5) }}|{% macro v() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ v(1, 2, k=3) }}|{% macro mm(x) %}[{{ x }}]{% endmacro %}{{ mm() }})J",
                 R"J({})J", R"J(12x|13x|12y|52x|(1, 2){'k': 3}|[])J"},
                {R"J({% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner{% endcall %}|{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(item) each([1,2]) %}({{ item }}){% endcall %})J", R"J({})J",
                 R"J(<b>inner</b>|(1)(2))J"},
                {R"J({% filter upper %}hello {{ 'x' }}{% endfilter %}|{% set blk %}inside {{ 1 + 1 }}{% endset %}{{ blk }}|{% set blk2 | upper %}abc{% endset %}{{ blk2 }}|{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }})J",
                 R"J({})J", R"J(HELLO X|inside 2|ABC|3)J"},
                {R"J({% raw %}{{ not rendered }}{% endraw %}|{# comment #}x|{{ 'a' }}  {{- ' b' }}|{{ 'a' -}}   {{ 'b' }}|{%- if true -%}  y  {%- endif -%}|)J",
                 R"J({})J", R"J({{ not rendered }}|x|a b|ab|y|)J"},
                {R"J({{ x is defined }}|{{ none is none }}|{{ 1 is number }}|{{ true is number }}|{{ true is integer }}|{{ 1 is integer }}|{{ 1.0 is float }}|{{ 'a' is string }}|{{ [1] is sequence }}|{{ {} is mapping }}|{{ 'a' is iterable }}|{{ 3 is odd }}|{{ 4 is even }}|{{ 9 is divisibleby 3 }}|{{ 1 is sameas 1 }}|{{ none is sameas none }}|{{ 'x' is in 'xyz' }}|{{ true is boolean }}|{{ 1 is boolean }}|{{ true is true }}|{{ 1 is true }}|{{ 'ab' is lower }}|{{ 'AB' is upper }}|{{ range is callable }}|{{ 2 is eq 2 }}|{{ 1 is lt 2 }}|{{ 'upper' is filter }}|{{ 'odd' is test }})J",
                 R"J({})J",
                 R"J(False|True|True|True|False|True|True|True|True|True|True|True|True|True|True|True|True|True|False|True|False|True|True|True|True|True|True|True)J"},
                {R"J({{ range(3) | list }}|{{ range(1, 10, 3) | list }}|{{ range(5, 0, -2) | list }}|{{ range(0) | list }}|{{ namespace(a=1).a }}|{{ dict(a=1, b=2) }}|{{ strftime_now('%Y-%m-%d %H:%M %B %b %A %a %j') }}|{{ strftime_now('%-d %e') }})J",
                 R"J({})J",
                 R"J([0, 1, 2]|[1, 4, 7]|[5, 3, 1]|[]|1|{'a': 1, 'b': 2}|2026-01-15 12:00 January Jan Thursday Thu 015|15 15)J"},
                {R"J({{ {'a': 1}.get('a') }}|{{ {'a': 1}.get('b') }}|{{ {'a': 1}.get('b', 5) }}|{{ {'a': 1}.keys() | list }}|{{ {'a': 1}.values() | list }}|{{ {'a': 1}.items() | list }}|{{ {'items': 3}['items'] }}|{{ {'items': 3}.items() | list }}|{{ [1,2].index(2) }}|{{ [1,2,2].count(2) }})J",
                 R"J({})J", R"J(1|None|5|['a']|[1]|[('a', 1)]|3|[('items', 3)]|1|2)J"},
                {R"J({% set l = [1] %}{% set _ = l.append(2) %}{{ l }}|{% set l2 = [1, 2, 3] %}{{ l2.pop() }}{{ l2.pop(0) }}{{ l2 }}|{% set d = {'a': 1} %}{% set _ = d.update({'b': 2}) %}{{ d }}{{ d.pop('a') }}{{ d }}|{% do l.append(3) %}{{ l }})J",
                 R"J({})J", R"J([1, 2]|31[2]|{'a': 1, 'b': 2}1{'b': 2}|[1, 2, 3])J"},
                {R"J({{ '%s and %s' % ('a', 'b') }}|{{ '%(x)s!' % {'x': 1} }}|{{ '%d%%' % 5 }}|{{ '%.2f' % 3.14159 }}|{{ '%5s|%-5s|' % ('a', 'b') }}|{{ '%r' % 'x' }}|{{ '%s' % [1] }}|{{ '%03d' % 7 }}|{{ '%+d' % 7 }}|{{ '%e' % 12345.678 }}|{{ '%g' % 0.00001234 }})J",
                 R"J({})J",
                 R"J(a and b|1!|5%|3.14|    a|b    ||'x'|[1]|007|+7|1.234568e+04|1.234e-05)J"},
                {R"J({{ 'a' 'b' }}|{{ "x" ~ 'y' ~ "z" }}|{{ 1_000 }}|{{ 0x1F }}|{{ 0o17 }}|{{ 0b101 }}|{{ 1e3 }}|{{ 2.5e-3 }}|{{ foo.bar if foo is defined else 'nofoo' }}|{{ [1,2,3][1:] }}|{{ (1, 2)[0] }}|{{ {'a': {'b': 'c'}}.a.b }}|{{ {'a': [10, 20]}.a.1 }})J",
                 R"J({})J", R"J(ab|xyz|1000|31|15|5|1000.0|0.0025|nofoo|[2, 3]|1|c|20)J"},
                {R"J({{ '{:>5}|{:<5}|{:^5}|{:05d}|{:.2f}|{:,}|{:x}|{:+d}|{!r}|{:.3}'.format('a', 'b', 'c', 42, 3.14159, 1234567, 255, 5, 'q', 'abcdef') }}|{{ '{} {}'.format(1.0, none) }}|{{ 'é'.center(5, '*') }}|{{ 'ab'.zfill(5) }}|{{ '-5'.zfill(4) }}|{{ 'ab'.ljust(4, '.') }}|{{ 'ab'.rjust(4) }})J",
                 R"J({})J",
                 R"J(    a|b    |  c  |00042|3.14|1,234,567|ff|+5|'q'|abc|1.0 None|**é**|000ab|-005|ab..|  ab)J"},
                {R"J({{ 'Hello World'.swapcase() }}|{{ 'abc'.isalpha() }}|{{ '123'.isdigit() }}|{{ 'a1'.isalnum() }}|{{ '  '.isspace() }}|{{ 'Ab'.istitle() }}|{{ 'ab'.islower() }}|{{ 'a=b=c'.partition('=') }}|{{ 'a=b=c'.rpartition('=') }}|{{ 'line1\nline2\r\nline3'.splitlines() }}|{{ 'abcabc'.rfind('b') }}|{{ 'prefix_x'.removeprefix('prefix_') }})J",
                 R"J({})J",
                 R"J(hELLO wORLD|True|True|True|True|True|True|('a', '=', 'b=c')|('a=b', '=', 'c')|['line1', 'line2', 'line3']|4|x)J"},
                {R"J({{ [[1, 2], [3, 4]] | map('first') | list }}|{{ [1,2,3,4,5] | batch(2) | list }}|{{ [1,2,3,4,5] | batch(2, 0) | list }}|{{ [1,2,3,4,5] | slice(2) | list }}|{{ [{'a':'x','b':1},{'a':'y','b':2},{'a':'x','b':3}] | groupby('a') | list }}|{{ ['a', 'b'] | map('upper') | join }}|{{ [1,2] | map('string') | join('+') }})J",
                 R"J({})J",
                 R"J([1, 3]|[[1, 2], [3, 4], [5]]|[[1, 2], [3, 4], [5, 0]]|[[1, 2, 3], [4, 5]]|[('x', [{'a': 'x', 'b': 1}, {'a': 'x', 'b': 3}]), ('y', [{'a': 'y', 'b': 2}])]|AB|1+2)J"},
                {R"J({{ 'ÄÖÜ àéî ΑΒΓ абв' | lower }}|{{ 'àéî straße ωβ абв' | upper }}|{{ 'émile zola' | title }}|{{ 'élan' | capitalize }}|{{ 'Ça va'.lower() }})J",
                 R"J({})J", R"J(äöü àéî αβγ абв|ÀÉÎ STRASSE ΩΒ АБВ|Émile Zola|Élan|ça va)J"},
                {R"J({{ [1, 2, 3] | sum(start=10) }}|{{ [{'v': 1}, {'v': 2}] | sum(attribute='v') }}|{{ [{'v': 3}, {'v': 2}] | min(attribute='v') }}|{{ ['B', 'a'] | max }}|{{ ['B', 'a'] | max(case_sensitive=true) }}|{{ 'a b' | urlencode }}|{{ '<a href="x">t</a> &' | e }}|{{ '<p>hi  <b>there</b></p>' | striptags }})J",
                 R"J({})J",
                 R"J(16|3|{'v': 2}|B|a|a%20b|&lt;a href=&#34;x&#34;&gt;t&lt;/a&gt; &amp;|hi there)J"},
                {R"J({{ 'abcdefghij' | truncate(5) }}|{{ 'hello world this is long text here ok' | truncate(20) }}|{{ 'hello world this is long text here ok' | truncate(20, true) }}|{{ [1, 'a'] | pprint }}|{{ {'a': 1} | attr('a') }}|{{ 'abc' | list }}|{{ {'a': 1, 'b': 2} | list }})J",
                 R"J({})J",
                 R"J(abcdefghij|hello world this...|hello world this ...|[1, 'a']||['a', 'b', 'c']|['a', 'b'])J"},
                {R"J({%- set x = 5 -%}
  {{ x }}
{%- for i in range(2) %}
  line {{ i }}
{% endfor %}
end
    {% if true %}
    indented
    {% endif %}
  {#- c -#}
  tail
{%+ if true %}keep{% endif %}
{% if true +%}
plus
{%- endif %}
)J",
                 R"J({})J",
                 R"J(5  line 0
  line 1
end
    indented
tail
keep
plus)J"},
                {R"J(line1
line2line3
{{ 'a
b' }}
)J",
                 R"J({})J",
                 R"J(line1
line2
line3
a
b)J"},
                {R"J({% for m in messages %}{{ loop.index0 }}:{{ m.role }}={{ m['content'] }}{% if not loop.last %}, {% endif %}{% endfor %})J",
                 R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]})J",
                 R"J(0:system=Be brief., 1:user=Hi, 2:assistant=Hello, 3:user=Bye)J"},
                {R"J({{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(' / ') }})J",
                 R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]})J",
                 R"J(Hi / Bye)J"},
                {R"J({{ messages[-1].content }}|{{ (messages | last).role }}|{{ messages | length }}|{{ messages[1:] | map(attribute='role') | list }})J",
                 R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]})J",
                 R"J(Bye|user|4|['user', 'assistant', 'user'])J"},
                {R"J({% set ns = namespace(last=-1) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{{ ns.last }})J",
                 R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]})J",
                 R"J(3)J"},
                {R"J({{ tools | tojson }}|{{ tools[0] | tojson(indent=4) }})J",
                 R"J({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer", "description": "ü"}}}}}]})J",
                 R"J([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer", "description": "ü"}}}}}]|{
    "type": "function",
    "function": {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {
                "x": {
                    "type": "integer",
                    "description": "ü"
                }
            }
        }
    }
})J"},
                {R"J({{ data.items() | list }}|{{ data | dictsort }}|{% for k, v in data | dictsort(reverse=true) %}{{ k }}{{ v }}{% endfor %})J",
                 R"J({"data": {"b": 2, "a": 1, "C": 3}})J",
                 R"J([('b', 2), ('a', 1), ('C', 3)]|[('a', 1), ('b', 2), ('C', 3)]|C3b2a1)J"},
                {R"J({{ x }}|{{ x * 2 }}|{{ x / 2 }}|{{ x | tojson }}|{{ y }}|{{ y | int }}|{{ z is none }}|{{ z }})J",
                 R"J({"x": 1.5, "y": 3, "z": null})J", R"J(1.5|3.0|0.75|1.5|3|3|True|None)J"},
                {R"J({{ big }}|{{ neg }}|{{ f }}|{{ f | tojson }})J",
                 R"J({"big": 9007199254740993, "neg": -42, "f": 100.0})J",
                 R"J(9007199254740993|-42|100.0|100.0)J"},
                {R"J({% macro render(v, depth=0) %}{% if v is mapping %}{% for k, x in v.items() %}{{ ' ' * depth }}{{ k }}:{{ render(x, depth + 1) }}{% endfor %}{% elif v is iterable and v is not string %}[{% for x in v %}{{ render(x, depth) }}{% endfor %}]{% else %}{{ v }};{% endif %}{% endmacro %}{{ render(doc) }})J",
                 R"J({"doc": {"a": {"b": [1, 2], "c": "x"}, "d": true}})J",
                 R"J(a: b:[1;2;] c:x;d:True;)J"},
                {R"J({{ content | replace('\n', ' ') | trim }}|{{ content.split('\n') | length }}|{{ content | wordcount }})J",
                 R"J({"content": "Résumé:\n  • naïve café\n\tend 🦙"})J",
                 R"J(Résumé:   • naïve café 	end 🦙|3|4)J"},
                {R"J({{ '%-10s|' | format(s) }}{{ s | length }}{{ s[::-1] }}{{ s | upper }}{{ s.title() }})J",
                 R"J({"s": "naïve café"})J", R"J(naïve café|10éfac evïanNAÏVE CAFÉNaïve Café)J"},
                {R"J({% if enable_thinking is defined and enable_thinking is false %}off{% else %}on{% endif %})J",
                 R"J({"enable_thinking": false})J", R"J(off)J"},
                {R"J({%- if tools is not none and tools | length > 0 %}T{{ tools | length }}{% else %}none{% endif %})J",
                 R"J({"tools": null})J", R"J(none)J"},
                {R"J({{ tools is defined }}|{{ tools is none }}|{{ documents | default([]) | length }})J",
                 R"J({"tools": null})J", R"J(True|True|0)J"},
                {R"J({% set content = message.content if message.content is string else message.content | map(attribute='text') | join('') %}{{ content }})J", R"J({"message": {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}})J",
                 R"J(ab)J"},
                {R"J({{ message.tool_calls is defined }}|{{ message.get('tool_calls') }}|{{ message.get('tool_calls', []) | length }}|{{ message['tool_calls'] is undefined }})J",
                 R"J({"message": {"role": "assistant", "content": null}})J",
                 R"J(False|None|0|True)J"},
                {R"J({% for tc in message.tool_calls %}{{ tc.function.name }}({{ tc.function.arguments | tojson }}){% endfor %}|{% for tc in message.tool_calls %}{% for k, v in tc.function.arguments.items() %}{{ k }}={{ v }};{% endfor %}{% endfor %})J",
                 R"J({"message": {"tool_calls": [{"function": {"name": "get", "arguments": {"city": "Zürich", "n": 3, "deep": {"a": [1, null]}}}}]}})J",
                 R"J(get({"city": "Zürich", "n": 3, "deep": {"a": [1, null]}})|city=Zürich;n=3;deep={'a': [1, None]};)J"},
                {R"J({{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y') }} {{ strftime_now('%A %H:%M:%S %p %j %y') }})J",
                 R"J({})J",
                 R"J(2026-01-15 15 Jan 2026 January 15, 2026 Thursday 12:00:00 PM 015 26)J"},
                {R"J({% for i in range(3) %}{% for j in range(3) %}{% if j > i %}{% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %})J",
                 R"J({})J", R"J(00 10 11 20 21 22 )J"},
                {R"J({% set a = [3, 1, 2] %}{{ a | sort | first }}{{ a | max }}{{ a | min }}{{ a | sum }}{{ a | map('string') | join('-') }}{{ a | reverse | list }}{{ a }})J",
                 R"J({})J", R"J(13163-1-2[2, 1, 3][3, 1, 2])J"},
                {R"J({{ '{"a": 1}' }}|{{ "'quoted'" }}|{{ 'back\\slash' }}|{{ 'tab\there' }}|{{ '\u00e9\x41\101' }})J",
                 R"J({})J", R"J({"a": 1}|'quoted'|back\slash|tab	here|éAA)J"},
                {R"J({% for x in [1, 2, 3] %}{{ loop.changed(x > 1) }}{% endfor %}|{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}|{% set j = joiner('+') %}{% for x in 'abc' %}{{ j() }}{{ x }}{% endfor %})J",
                 R"J({})J", R"J(TrueTrueFalse|abab|a+b+c)J"},
                {R"J({{ [1, 2, 3] | select('in', [2, 3]) | list }}|{{ ['a', 'B'] | map('lower') | unique | list }}|{{ [1, 2, 3, 4] | slice(3) | list }}|{{ 'x' | indent(4, first=true) }})J",
                 R"J({})J", R"J([2, 3]|['a', 'b']|[[1, 2], [3], [4]]|    x)J"},
                {R"J({{ 3 is odd and 4 is even }}|{{ 1 in [1] and 'a' not in 'b' }}|{{ none or 'x' }}|{{ 0 and 'x' }}|{{ [] or {} or 'z' }}|{{ not (1 == 1) }})J",
                 R"J({})J", R"J(True|True|x|0|z|False)J"},
                {R"J({% set t %}
  hello
  {{ 'world' }}
{% endset %}[{{ t }}]|{% filter trim %}  x  {% endfilter %}|{% filter replace('a', 'b') | upper %}aaa{% endfilter %})J",
                 R"J({})J",
                 R"J([  hello
  world
]|x|BBB)J"},
                {R"J({%- macro tag(name) -%}
<{{ name }}>{{ caller() | trim }}</{{ name }}>
{%- endmacro -%}
{%- call tag('p') %}
  body
{% endcall -%})J",
                 R"J({})J", R"J(<p>body</p>)J"},
                {R"J({% set x = 1 %}{% filter upper %}{% set x = 2 %}{{ x }}{% endfilter %}{{ x }})J",
                 R"J({})J", R"J(21)J"},
                {R"J({% set x = 1 %}{% set b %}{% set x = 2 %}{{ x }}{% endset %}{{ b }}{{ x }})J",
                 R"J({})J", R"J(21)J"},
                {R"J({% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }})J", R"J({})J",
                 R"J(2)J"},
                {R"J({% set x = 1 %}{% macro m() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ m() }}{{ x }})J",
                 R"J({})J", R"J(21)J"},
                {R"J({% macro m() %}{{ x }}{% endmacro %}{% set x = 5 %}{{ m() }})J", R"J({})J",
                 R"J(5)J"},
                {R"J({% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 5 %}{{ m() }})J",
                 R"J({})J", R"J(5)J"},
                {R"J({% for i in [1] %}{% set y = 3 %}{% endfor %}{{ y }})J", R"J({})J", R"J()J"},
                {R"J({% for i in [1,2] %}{% if loop.first %}{% set y = 3 %}{% endif %}{{ y }}{% endfor %})J",
                 R"J({})J", R"J(3)J"},
                {R"J({% set x = 1 %}{% with %}{% set x = 2 %}{{ x }}{% endwith %}{{ x }})J",
                 R"J({})J", R"J(21)J"},
                {R"J({% macro m() %}{% for i in [1] %}{{ caller(i) }}{% endfor %}{% endmacro %}{% set z = 9 %}{% call(v) m() %}{{ v }}{{ z }}{% set z = 1 %}{{ z }}{% endcall %}{{ z }})J",
                 R"J({})J", R"J(1919)J"},
                {R"J({% for i in [1, 2] %}{{ i }}{% set i = 5 %}{{ i }}{% endfor %})J", R"J({})J",
                 R"J(1525)J"},
                {R"J({% set i = 7 %}{% for i in [1, 2] %}{% endfor %}{{ i }})J", R"J({})J",
                 R"J(7)J"},
                {R"J({% for x in [1] %}{% macro m() %}in{{ x }}{% endmacro %}{% endfor %}{{ m is defined }})J",
                 R"J({})J", R"J(False)J"},
                {R"J({% set ns = namespace(a=1) %}{% macro m() %}{% set ns.a = 2 %}{% endmacro %}{{ m() }}{{ ns.a }})J",
                 R"J({})J", R"J(2)J"},
                {R"J({% for a in [1,2] %}{% for b in [3] %}{{ loop.index }}{{ a }}{% endfor %}{{ loop.index }}{% endfor %})J",
                 R"J({})J", R"J(111122)J"},
                {R"J({% set l = [1,2,3] %}{% for x in l %}{{ x }}{% if x == 1 %}{% do l.append(4) %}{% endif %}{% endfor %})J",
                 R"J({})J", R"J(1234)J"},
                {R"J({{ x }}{% set x = 1 %}{{ x }})J", R"J({})J", R"J(1)J"},
                {R"J({% macro m(a, b=a) %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }})J", R"J({})J",
                 R"J(11)J"},
                {R"J({{ -0.5 is odd }}|{{ 3.0 is odd }}|{{ 4 is even }}|{{ xs | safe }}|{{ 'a' % [1] }}|{{ '%s' % [1] }}|{{ (0 % -0.5) }}|{{ -7 // 2.0 }})J",
                 R"J({"xs": [1, 2]})J", R"J(False|True|True|[1, 2]|a|[1]|-0.0|-4.0)J"},
                {R"J({{ s[1:] }}|{{ s[::-1] }}|{{ s[-3:-1] }}|{{ xs[::-1] }}|{{ xs[1::2] }}|{{ xs[-100:100] }}|{{ xs[5:1] }}|{{ s[1] }}|{{ s[-1] }})J",
                 R"J({"s": "héllo 🦙!", "xs": [1, 2, 3, 4, 5]})J",
                 R"J(éllo 🦙!|!🦙 olléh| 🦙|[5, 4, 3, 2, 1]|[2, 4]|[1, 2, 3, 4, 5]|[]|é|!)J"},
                {R"J({{ d.items | list if false else d['items'] }}|{{ d.keys is callable }}|{{ d.get('items') }}|{{ d['keys'] }})J",
                 R"J({"d": {"items": "I", "keys": "K"}})J", R"J(I|True|I|K)J"},
                {R"J({% for k, v in d.items() if v is not none %}{{ k }}{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %})J",
                 R"J({"d": {"a": 1, "b": null, "c": 3}})J", R"J(a1/2 c2/2 )J"},
                {R"J({% set ns = namespace(items=[]) %}{% for m in messages %}{% set ns.items = ns.items + [m.role] %}{% endfor %}{{ ns.items | join(',') }}|{{ ns.items | length }})J",
                 R"J({"messages": [{"role": "user"}, {"role": "assistant"}]})J",
                 R"J(user,assistant|2)J"},
                {R"J({% macro m(a, b) -%}[{{ a }}|{{ b }}|{{ varargs }}|{{ kwargs }}]{%- endmacro %}{{ m(1) }}{{ m(1, 2, 3, x=4) }}{{ m(b=2, a=1) }})J",
                 R"J({})J", R"J([1||()|{}][1|2|(3,)|{'x': 4}][1|2|()|{}])J"},
                {R"J({{ (1, 2) == (1, 2) }}|{{ [1, 2] == (1, 2) }}|{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}|{{ none == false }}|{{ 1 == true }}|{{ 'a' != 'b' }}|{{ [] == [] }}|{{ 0.1 + 0.2 == 0.3 }})J",
                 R"J({})J", R"J(True|False|True|False|True|True|True|False)J"},
                {R"J({{ 10 / 4 }}|{{ 10 // 4 }}|{{ -10 // 4 }}|{{ 10 % -4 }}|{{ 2 ** 0.5 }}|{{ 1e308 * 10 }}|{{ 3 * 1.0 }}|{{ 7 / 7 }}|{{ true + true }}|{{ 5 - 7.5 }})J",
                 R"J({})J", R"J(2.5|2|-3|-2|1.4142135623730951|inf|3.0|1.0|2|-2.5)J"},
                {R"J({{ 'x' | tojson }}|{{ none | tojson }}|{{ [none, true, false] | tojson }}|{{ {'é': 'ü'} | tojson(ensure_ascii=true) }}|{{ 'a\u0000b' | tojson }}|{{ '</script>' | tojson }}|{{ 1e20 | tojson }}|{{ 123456789.125 | tojson }})J",
                 R"J({})J",
                 R"J("x"|null|[null, true, false]|{"\u00e9": "\u00fc"}|"a\u0000b"|"</script>"|1e+20|123456789.125)J"},
                {R"J({{ 'Hello' ~ ' ' ~ name | default('World') ~ '!' }}|{{ 'a' if name else 'b' }}|{{ name is defined and name }})J",
                 R"J({})J", R"J(Hello World!|b|False)J"},
                {R"J({%- set msg = "First line.\
Second \"quoted\" line.\
\
End" %}{{ msg }})J",
                 R"J({})J", R"J(First line.Second "quoted" line.End)J"},
                {R"J({%- set table = {
     0:      0,
     512:    128,
     1024:   256
} -%}{%- set ns = namespace(interval = None) -%}{%- for k, v in table | dictsort -%}{%- if ns.interval is none and budget <= k -%}{%- set ns.interval = v -%}{%- endif -%}{%- endfor -%}{{ ns.interval }}|{{ table[1024] }}|{{ table | tojson }})J",
                 R"J({"budget": 600})J", R"J(256|256|{"0": 0, "512": 128, "1024": 256})J"},
                {R"J({%- for item in tools if item.type == "function" %}
def {{ item.function.name }}(
{%- for name, spec in item.function.parameters.properties.items() %}
        {{- name }}: {{ spec.type }}{% if not loop.last %},{% endif %}
{%- endfor %}):
    {%- if item.function.returns is defined
          and item.function.returns.properties is defined %}
    has returns
    {%- endif %}
{%- endfor %})J",
                 R"J({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}}, {"type": "other"}]})J",
                 R"J(def f(a: string,b: integer):)J"},
                {R"J({% set out = call.function | tojson %}{{ out[:-1] }}, "id": "{{ call.id[-9:] }}"}})J",
                 R"J({"call": {"id": "call_abcdefghijk", "function": {"name": "f", "arguments": {"x": 1}}}})J",
                 R"J({"name": "f", "arguments": {"x": 1}, "id": "cdefghijk"}})J"},
                {R"J({%- for arg_name, arg_value in args | items %}<{{ arg_name }}>{{ arg_value if arg_value is string else arg_value | string }}</{{ arg_name }}>{% endfor %})J", R"J({"args": {"s": "x", "n": 3, "l": [1, "a"], "d": {"k": null}}})J",
                 R"J(<s>x</s><n>3</n><l>[1, 'a']</l><d>{'k': None}</d>)J"},
                {R"J({{ '工具调用请遵循' | length }}|{{ '工具调用请遵循'[1:3] }}|{{ '🦙🦙🦙' | reverse }}|{{ 'ÀÉÎ' | lower }}|{{ 'ǅ' | upper }})J",
                 R"J({})J", R"J(7|具调|🦙🦙🦙|àéî|Ǆ)J"},
};

TEST(JinjaSemantics, MatchesPythonJinja2) {
  int failures = 0;
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    const Case& c = kCases[i];
    strata::chat::RenderOptions opts;
    opts.add_generation_prompt = true;
    opts.bos_token = "<s>";
    opts.eos_token = "</s>";
    opts.now = 1768478400;  // 2026-01-15 12:00:00 UTC
    opts.extra_ordered = nlohmann::ordered_json::parse(c.vars);
    nlohmann::ordered_json messages =
        opts.extra_ordered.value("messages", nlohmann::ordered_json::array());
    opts.extra_ordered.erase("messages");
    std::string got;
    try {
      got = strata::chat::ChatTemplate(c.source, "case" + std::to_string(i))
                .render_ordered(messages, opts);
    } catch (const std::exception& e) {
      got = std::string("<error: ") + e.what() + ">";
    }
    if (got != c.expected) {
      ++failures;
      ADD_FAILURE() << "case " << i << ": " << c.source << "\n  expected: " << c.expected
                    << "\n  got:      " << got;
    }
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
