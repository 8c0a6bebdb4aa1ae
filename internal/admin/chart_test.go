package admin

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgDoc is what a chart's SVG holds, decoded by encoding/xml: a
// malformed document fails the decoding.
type svgDoc struct {
	ViewBox string `xml:"viewBox,attr"`
	Title   string `xml:"title"`
	Paths   []struct {
		Class string `xml:"class,attr"`
		D     string `xml:"d,attr"`
		Dash  string `xml:"stroke-dasharray,attr"`
	} `xml:"path"`
	Circles []struct {
		CX string `xml:"cx,attr"`
		CY string `xml:"cy,attr"`
	} `xml:"circle"`
	Lines []struct {
		X1 string `xml:"x1,attr"`
		X2 string `xml:"x2,attr"`
		Y1 string `xml:"y1,attr"`
		Y2 string `xml:"y2,attr"`
	} `xml:"line"`
	Texts []struct {
		X    string `xml:"x,attr"`
		Y    string `xml:"y,attr"`
		Text string `xml:",chardata"`
	} `xml:"text"`
}

// decodeSVG checks that svg is well-formed XML, every token of it, and
// decodes it.
func decodeSVG(t *testing.T, svg string) svgDoc {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, svg)
		}
	}
	var doc svgDoc
	if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
		t.Fatalf("decode the SVG: %v", err)
	}
	return doc
}

func coord(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		t.Fatalf("coordinate %q is not a finite number", s)
	}
	return v
}

// pathPoints are the points of a path's d attribute (M and L commands).
func pathPoints(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	f := strings.Fields(strings.NewReplacer("M", " ", "L", " ").Replace(d))
	if len(f)%2 != 0 {
		t.Fatalf("path %q has an odd number of coordinates", d)
	}
	for i := 0; i < len(f); i += 2 {
		out = append(out, [2]float64{coord(t, f[i]), coord(t, f[i+1])})
	}
	return out
}

// checkChart checks what every chart must be: well-formed, no NaN or Inf
// anywhere, everything inside the viewBox, and the series's points
// inside the plot area. It returns the decoded document.
func checkChart(t *testing.T, c Chart) svgDoc {
	t.Helper()
	svg := string(c.SVG())
	for _, bad := range []string{"NaN", "Inf"} {
		if strings.Contains(svg, bad) {
			t.Errorf("the SVG has %s:\n%s", bad, svg)
		}
	}
	doc := decodeSVG(t, svg)
	vb := strings.Fields(doc.ViewBox)
	if len(vb) != 4 {
		t.Fatalf("viewBox %q", doc.ViewBox)
	}
	w, h := coord(t, vb[2]), coord(t, vb[3])
	inBox := func(what string, x, y float64) {
		if x < 0 || x > w || y < 0 || y > h {
			t.Errorf("%s at (%g, %g) is outside the viewBox %gx%g", what, x, y, w, h)
		}
	}
	inPlot := func(what string, x, y float64) {
		if x < chartLeft || x > chartLeft+chartPlotW() || y < chartTop || y > chartTop+chartPlotH {
			t.Errorf("%s at (%g, %g) is outside the plot area", what, x, y)
		}
	}
	for _, p := range doc.Paths {
		for _, pt := range pathPoints(t, p.D) {
			inPlot("a series's point", pt[0], pt[1])
		}
	}
	for _, c := range doc.Circles {
		inPlot("a lone point", coord(t, c.CX), coord(t, c.CY))
	}
	for _, l := range doc.Lines {
		inBox("a line's start", coord(t, l.X1), coord(t, l.Y1))
		inBox("a line's end", coord(t, l.X2), coord(t, l.Y2))
	}
	for _, tx := range doc.Texts {
		inBox("text "+tx.Text, coord(t, tx.X), coord(t, tx.Y))
	}
	return doc
}

func texts(doc svgDoc) string {
	var b strings.Builder
	for _, tx := range doc.Texts {
		b.WriteString(tx.Text + "|")
	}
	return b.String()
}

func TestChartSVG(t *testing.T) {
	to := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	from := to.Add(-5 * time.Minute)
	ramp := func(n int, f func(i int) float64) []Point {
		out := make([]Point, n)
		for i := range out {
			out[i] = Point{At: from.Add(time.Duration(i) * 5 * time.Minute / time.Duration(max(n-1, 1))), V: f(i)}
		}
		return out
	}
	chart := func(series ...Series) Chart {
		return Chart{ID: "c", Title: "Statements per second", Unit: "per cluster", From: from, To: to, Series: series}
	}

	t.Run("lines", func(t *testing.T) {
		c := chart(Series{Name: "s0", Points: ramp(61, func(i int) float64 { return float64(i * 20) })},
			Series{Name: "s1 p99", Color: 1, Dashed: true, Points: ramp(61, func(i int) float64 { return 3 })})
		doc := checkChart(t, c)
		if len(doc.Paths) != 2 || doc.Paths[1].Dash == "" || doc.Paths[0].Dash != "" {
			t.Fatalf("paths %+v, want a solid and a dashed one", doc.Paths)
		}
		if n := len(pathPoints(t, doc.Paths[0].D)); n != 61 {
			t.Errorf("%d points drawn, want 61", n)
		}
		// The largest value, 1200, is at 1200/1500 of the axis (whose top
		// is the round value 1500), the first, 0, at the bottom left.
		pts := pathPoints(t, doc.Paths[0].D)
		first, last := pts[0], pts[len(pts)-1]
		if last[0] != chartLeft+chartPlotW() || math.Abs(last[1]-(chartTop+chartPlotH*0.2)) > 0.05 {
			t.Errorf("the last, largest point is at %v, want at the right, 1200/1500 up", last)
		}
		if first[0] != chartLeft || first[1] != chartTop+chartPlotH {
			t.Errorf("the first point, 0, is at %v, want the bottom left corner", first)
		}
		if !strings.Contains(string(c.SVG()), "per cluster</tspan>") {
			t.Errorf("the unit is not shown")
		}
		all := texts(doc)
		for _, want := range []string{"Statements per second", "now|", "−1 min|", "1500|", "s0|", "s1 p99|"} {
			if !strings.Contains(all, want) {
				t.Errorf("the texts %q lack %q", all, want)
			}
		}
		if doc.Title != "Statements per second (per cluster)" {
			t.Errorf("title %q", doc.Title)
		}
	})

	t.Run("empty", func(t *testing.T) {
		for name, c := range map[string]Chart{
			"no series":      chart(),
			"no points":      chart(Series{Name: "s0"}),
			"only NaN":       chart(Series{Name: "s0", Points: ramp(5, func(int) float64 { return math.NaN() })}),
			"out of range":   chart(Series{Name: "s0", Points: []Point{{At: from.Add(-time.Hour), V: 3}}}),
			"a zero x range": {Title: "t", Unit: "u", From: to, To: to},
		} {
			t.Run(name, func(t *testing.T) {
				doc := checkChart(t, c)
				if len(doc.Paths) != 0 || !strings.Contains(texts(doc), "no data yet") {
					t.Errorf("an empty chart: %d paths, texts %q; want none and 'no data yet'", len(doc.Paths), texts(doc))
				}
			})
		}
	})

	t.Run("one sample", func(t *testing.T) {
		doc := checkChart(t, chart(Series{Name: "s0", Points: []Point{{At: to, V: 42}}}))
		if len(doc.Paths) != 1 || len(doc.Circles) != 1 {
			t.Fatalf("one sample: %d paths and %d circles, want a dot", len(doc.Paths), len(doc.Circles))
		}
	})

	t.Run("not finite", func(t *testing.T) {
		vals := []float64{1, math.NaN(), 2, math.Inf(1), 3, 4, math.Inf(-1), -5, 1e300, 7}
		doc := checkChart(t, chart(Series{Name: "s0", Points: ramp(len(vals), func(i int) float64 { return vals[i] })}))
		// Gaps split the line: 1 | 2 | 3 4 | -5 1e300 7; the lone 1 and 2
		// are dots.
		if len(doc.Paths) != 1 || strings.Count(doc.Paths[0].D, "M") != 4 || len(doc.Circles) != 2 {
			t.Errorf("path %q and %d dots, want 4 runs and 2 dots", doc.Paths[0].D, len(doc.Circles))
		}
	})

	t.Run("escaped", func(t *testing.T) {
		doc := checkChart(t, Chart{Title: `<b>"x" & y</b>`, Unit: "ms", From: from, To: to,
			Series: []Series{{Name: "</text><script>", Points: ramp(2, func(int) float64 { return 1 })}}})
		if !strings.Contains(texts(doc), "</text><script>|") || doc.Title != `<b>"x" & y</b> (ms)` {
			t.Errorf("texts %q, title %q: not the names given", texts(doc), doc.Title)
		}
	})

	t.Run("a long legend wraps", func(t *testing.T) {
		var series []Series
		for i := range 12 {
			series = append(series, Series{Name: "cluster-" + strconv.Itoa(i) + " p99", Color: i, Points: ramp(3, func(int) float64 { return 1 })})
		}
		doc := checkChart(t, chart(series...))
		if len(doc.Paths) != 12 {
			t.Errorf("%d paths, want 12", len(doc.Paths))
		}
	})
}

// The y axis's ticks are round values with the decimals they need.
func TestChartTicks(t *testing.T) {
	for _, tc := range []struct {
		hi   float64
		want []string
	}{
		{1200, []string{"0", "500", "1000", "1500"}},
		{0.37, []string{"0", "0.1", "0.2", "0.3", "0.4"}},
		{9, []string{"0", "2.5", "5", "7.5", "10"}},
		{0, []string{"0", "0.25", "0.5", "0.75", "1"}},
		{4e6, []string{"0", "1M", "2M", "3M", "4M"}},
	} {
		c := Chart{Series: []Series{{Points: []Point{{V: tc.hi}}}}}
		top, ticks := c.yScale()
		var got []string
		for _, v := range ticks {
			got = append(got, tickLabel(v, ticks[1]-ticks[0]))
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") || top < tc.hi {
			t.Errorf("max %g: ticks %v (top %g), want %v", tc.hi, got, top, tc.want)
		}
	}
}

// The page's charts of a history: per cluster rates and latencies, a
// pool chart per server, the replicas' lag with a gap where it was
// unknown; an empty history gives the charts with nothing drawn.
func TestStatusCharts(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var samples []Sample
	for i := range 5 {
		samples = append(samples, Sample{At: now.Add(time.Duration(i-4) * HistoryEvery),
			Clusters: []ClusterSample{{Cluster: "-", QPS: 1, P50: math.NaN(), P99: math.NaN()}, {Cluster: "s1", QPS: 10, P50: 0.002, P99: 0.008}},
			Servers: []ServerSample{{Cluster: "s1", Address: "db1:3306", InUse: 1, Idle: 2, Max: 4},
				{Cluster: "s1", Address: "db2:3306", Replica: true, Lag: time.Duration(i) * time.Second, LagKnown: i != 2}}})
	}
	charts := statusCharts(samples, now)
	ids := make([]string, len(charts))
	for i, c := range charts {
		ids[i] = c.ID
		checkChart(t, c)
	}
	want := "chart-qps chart-latency chart-errors chart-pool-s1-db1-3306 chart-pool-s1-db2-3306 chart-lag"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("charts %s, want %s", got, want)
	}
	if c := charts[1]; len(c.Series) != 4 || c.Series[0].Name != "s1 p50" || !c.Series[3].Dashed ||
		c.Series[3].Name != "answered by the proxy p99" || c.Series[1].Points[0].V != 8 {
		t.Errorf("latency series %+v: want p50 and p99 in ms per cluster, real clusters first", c.Series)
	}
	if got := charts[0].To.Sub(charts[0].From); got != historyMinSpan {
		t.Errorf("a short history spans %s, want %s", got, historyMinSpan)
	}
	lag := decodeSVG(t, string(charts[5].SVG()))
	if len(lag.Paths) != 1 || strings.Count(lag.Paths[0].D, "M") != 2 {
		t.Errorf("lag path %+v, want two runs around the unknown sample", lag.Paths)
	}

	empty := statusCharts(nil, now)
	if len(empty) != 3 {
		t.Fatalf("%d charts of an empty history, want the 3 per cluster", len(empty))
	}
	for _, c := range empty {
		if doc := checkChart(t, c); len(doc.Paths) != 0 || !strings.Contains(texts(doc), "no statements yet") {
			t.Errorf("%s of an empty history: %d paths, texts %q", c.ID, len(doc.Paths), texts(doc))
		}
	}
}

func TestHistoryRing(t *testing.T) {
	h := NewHistory(3)
	if n := len(h.Samples()); n != 0 {
		t.Fatalf("a new history has %d samples", n)
	}
	t0 := time.Unix(1000, 0)
	for i := range 5 {
		h.Add(Sample{At: t0.Add(time.Duration(i) * time.Second)})
		got := h.Samples()
		if len(got) != min(i+1, 3) || !got[len(got)-1].At.Equal(t0.Add(time.Duration(i)*time.Second)) ||
			!got[0].At.Equal(t0.Add(time.Duration(max(0, i-2))*time.Second)) {
			t.Fatalf("after %d adds: %v, want the last 3, oldest first", i+1, got)
		}
	}
}
