package admin

import (
	"encoding/xml"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// The status page's charts: line charts over time, rendered here as SVG
// the page embeds, so that the page needs no chart library, no script and
// no build step to show a trend. The SVG uses presentation attributes
// only (no style attributes), which the page's Content-Security-Policy
// allows.

// Chart is a line chart of series over the time from From to To.
type Chart struct {
	ID       string // the figure's id on the page
	Title    string
	Unit     string // of the y axis: "statements/s", "ms", ...
	From, To time.Time
	Series   []Series
	// Empty is said in the plot when no series has a point to draw.
	Empty string
}

// Series is one line of a chart.
type Series struct {
	Name   string
	Color  int // index in chartPalette
	Dashed bool
	Points []Point
}

// Point is a value at a time; a value that is not finite (NaN: unknown)
// is a gap in the line.
type Point struct {
	At time.Time
	V  float64
}

// chartPalette are colours told apart by most eyes (Tableau 10).
var chartPalette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#8c8c8c"}

// The chart's geometry, in the SVG's user units: the plot area and the
// margins for the title, the axes' labels and the legend.
const (
	chartWidth   = 480
	chartLeft    = 56 // the y axis's labels
	chartRight   = 14
	chartTop     = 30 // the title
	chartPlotH   = 140
	chartXLabels = 18 // the x axis's labels
	chartLegendH = 16 // a row of the legend
	chartFont    = 11
	chartCharW   = 6.4 // an estimate of a character's width at chartFont, for laying out the legend
)

func chartPlotW() float64 { return chartWidth - chartLeft - chartRight }

// SVG renders the chart. Every number it writes is finite and every
// point lies inside the plot area; texts are escaped.
func (c Chart) SVG() template.HTML {
	var b strings.Builder
	legend := c.legendLayout()
	rows := 1
	if len(legend) > 0 {
		rows = legend[len(legend)-1].row + 1
	}
	height := chartTop + chartPlotH + chartXLabels + 8 + rows*chartLegendH
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" font-family="system-ui, sans-serif" font-size="%d">`,
		chartWidth, height, chartWidth, height, chartFont)
	b.WriteString("<title>")
	escapeText(&b, c.Title+" ("+c.Unit+")")
	b.WriteString("</title>")
	fmt.Fprintf(&b, `<text x="8" y="18" font-size="13" font-weight="bold" fill="#222">`)
	escapeText(&b, c.Title)
	b.WriteString(`<tspan font-weight="normal" fill="#666"> · `)
	escapeText(&b, c.Unit)
	b.WriteString("</tspan></text>")

	// The plot area, invisible: its box tells scripts and tests where the
	// lines are drawn.
	fmt.Fprintf(&b, `<rect class="plot" x="%d" y="%d" width="%s" height="%d" fill="none"/>`, chartLeft, chartTop, num(chartPlotW()), chartPlotH)
	top, ticks := c.yScale()
	c.writeYAxis(&b, top, ticks)
	c.writeXAxis(&b)
	drawn := 0
	for _, s := range c.Series {
		drawn += c.writeSeries(&b, s, top)
	}
	if drawn == 0 {
		empty := c.Empty
		if empty == "" {
			empty = "no data yet"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#888">`,
			num(chartLeft+chartPlotW()/2), num(chartTop+chartPlotH/2))
		escapeText(&b, empty)
		b.WriteString("</text>")
	}
	c.writeLegend(&b, legend)
	b.WriteString("</svg>")
	return template.HTML(b.String()) // every text in it went through escapeText
}

// span is the x axis's length; at least a second, so that a chart of one
// moment still has an axis.
func (c Chart) span() time.Duration {
	return max(c.To.Sub(c.From), time.Second)
}

// x maps a time to the plot, clamped to it.
func (c Chart) x(t time.Time) float64 {
	f := float64(t.Sub(c.From)) / float64(c.span())
	return chartLeft + clamp01(f)*chartPlotW()
}

// y maps a value to the plot, clamped to it; top is the axis's top value.
func y(v, top float64) float64 {
	return chartTop + chartPlotH - clamp01(v/top)*chartPlotH
}

func clamp01(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return min(max(f, 0), 1)
}

// yScale chooses the y axis: from 0 to a round value at or above the
// largest value drawn, with 3 to 5 ticks at round steps.
func (c Chart) yScale() (top float64, ticks []float64) {
	hi := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if finite(p.V) && c.inRange(p.At) {
				hi = max(hi, p.V)
			}
		}
	}
	if hi <= 0 {
		hi = 1
	}
	step := niceStep(hi / 4)
	top = math.Ceil(hi/step) * step
	if !finite(top) || top <= 0 {
		top, step = 1, 0.25
	}
	for i := 0; i <= 5; i++ {
		v := float64(i) * step
		if v > top*(1+1e-9) {
			break
		}
		ticks = append(ticks, v)
	}
	return top, ticks
}

// niceStep is the smallest of 1, 2, 2.5, 5 times a power of ten at or
// above raw.
func niceStep(raw float64) float64 {
	if !finite(raw) || raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (c Chart) inRange(t time.Time) bool { return !t.Before(c.From) && !t.After(c.To) }

func (c Chart) writeYAxis(b *strings.Builder, top float64, ticks []float64) {
	step := top
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	for _, v := range ticks {
		yy := num(y(v, top))
		fmt.Fprintf(b, `<line x1="%d" x2="%s" y1="%s" y2="%s" stroke="#e3e3e3"/>`, chartLeft, num(chartLeft+chartPlotW()), yy, yy)
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle" fill="#555">%s</text>`,
			chartLeft-6, yy, tickLabel(v, step))
	}
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#999"/>`, chartLeft, chartLeft, chartTop, chartTop+chartPlotH)
}

// xTickSteps are the x axis's candidate steps; the first that gives at
// most five ticks is used.
var xTickSteps = []time.Duration{10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute,
	2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}

// writeXAxis draws the time axis with ticks counted back from To ("now"
// at the right end), as far as From.
func (c Chart) writeXAxis(b *strings.Builder) {
	base := chartTop + chartPlotH
	fmt.Fprintf(b, `<line x1="%d" x2="%s" y1="%d" y2="%d" stroke="#999"/>`, chartLeft, num(chartLeft+chartPlotW()), base, base)
	span := c.span()
	step := xTickSteps[len(xTickSteps)-1]
	for _, s := range xTickSteps {
		if span/s <= 5 {
			step = s
			break
		}
	}
	for back := time.Duration(0); back <= span; back += step {
		xx := num(c.x(c.To.Add(-back)))
		fmt.Fprintf(b, `<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="#999"/>`, xx, xx, base, base+4)
		anchor := "middle"
		if back == 0 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<text x="%s" y="%d" text-anchor="%s" fill="#555">%s</text>`, xx, base+15, anchor, agoLabel(back))
	}
}

// agoLabel names a time before the chart's end: "now", "−30 s", "−2 min".
func agoLabel(d time.Duration) string {
	switch {
	case d == 0:
		return "now"
	case d < time.Minute || d%time.Minute != 0:
		return "−" + strconv.Itoa(int(d/time.Second)) + " s"
	}
	return "−" + strconv.Itoa(int(d/time.Minute)) + " min"
}

// tickLabel writes an axis value with the decimals its step needs, large
// ones with k or M.
func tickLabel(v, step float64) string {
	switch {
	case v == 0:
		return "0"
	case step >= 1e6:
		return trimZeros(strconv.FormatFloat(v/1e6, 'f', decimals(step/1e6), 64)) + "M"
	case step >= 1e3:
		return trimZeros(strconv.FormatFloat(v/1e3, 'f', decimals(step/1e3), 64)) + "k"
	}
	return trimZeros(strconv.FormatFloat(v, 'f', decimals(step), 64))
}

// decimals is how many a step's multiples need to be told apart.
func decimals(step float64) int {
	for d := 0; d < 6; d++ {
		if s := step * math.Pow(10, float64(d)); math.Abs(s-math.Round(s)) < 1e-6 {
			return d
		}
	}
	return 6
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// writeSeries draws a series as a path broken at its gaps, with a dot on
// each point that has no neighbour to join (a single sample shows), and
// returns how many points it drew.
func (c Chart) writeSeries(b *strings.Builder, s Series, top float64) int {
	color := chartPalette[((s.Color%len(chartPalette))+len(chartPalette))%len(chartPalette)]
	var d strings.Builder
	var lone []string
	drawn, run := 0, 0
	var last string
	endRun := func() {
		if run == 1 {
			lone = append(lone, last)
		}
		run = 0
	}
	for _, p := range s.Points {
		if !finite(p.V) || !c.inRange(p.At) {
			endRun()
			continue
		}
		xy := num(c.x(p.At)) + " " + num(y(p.V, top))
		if run == 0 {
			d.WriteString("M" + xy)
		} else {
			d.WriteString(" L" + xy)
		}
		last = xy
		run++
		drawn++
	}
	endRun()
	if drawn == 0 {
		return 0
	}
	dash := ""
	if s.Dashed {
		dash = ` stroke-dasharray="5 3"`
	}
	fmt.Fprintf(b, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round"%s/>`, d.String(), color, dash)
	for _, xy := range lone {
		cx, cy, _ := strings.Cut(xy, " ")
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`, cx, cy, color)
	}
	return drawn
}

// legendItem is a series's place in the legend.
type legendItem struct {
	s   Series
	x   float64
	row int
}

// legendLayout places the series's names left to right, wrapping rows at
// the chart's width.
func (c Chart) legendLayout() []legendItem {
	var out []legendItem
	x, row := float64(chartLeft), 0
	for _, s := range c.Series {
		w := 22 + chartCharW*float64(len([]rune(s.Name))) + 14
		if x+w > chartWidth-chartRight && x > chartLeft {
			x, row = chartLeft, row+1
		}
		out = append(out, legendItem{s: s, x: x, row: row})
		x += w
	}
	return out
}

func (c Chart) writeLegend(b *strings.Builder, items []legendItem) {
	base := chartTop + chartPlotH + chartXLabels + 8
	for _, it := range items {
		color := chartPalette[((it.s.Color%len(chartPalette))+len(chartPalette))%len(chartPalette)]
		yy := float64(base + it.row*chartLegendH + chartLegendH/2)
		dash := ""
		if it.s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2.5"%s/>`,
			num(it.x), num(it.x+16), num(yy), num(yy), color, dash)
		fmt.Fprintf(b, `<text x="%s" y="%s" dominant-baseline="middle" fill="#333">`, num(it.x+20), num(yy))
		escapeText(b, it.s.Name)
		b.WriteString("</text>")
	}
}

// num writes a coordinate with one decimal; never NaN or Inf (those are
// 0: a caller's bug should not make the page invalid).
func num(v float64) string {
	if !finite(v) {
		v = 0
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
}

// escapeText writes s escaped for XML text (HTML too).
func escapeText(b *strings.Builder, s string) {
	_ = xml.EscapeText(b, []byte(s))
}
