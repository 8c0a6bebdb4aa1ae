package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// targetStyle gives every target the same colour and marker in all panels.
var targetStyle = map[Target]struct {
	color color.Color
	shape draw.GlyphDrawer
}{
	Direct:    {color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, draw.CircleGlyph{}},
	Relay:     {color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, draw.SquareGlyph{}},
	Shardgate: {color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, draw.TriangleGlyph{}},
	Sharded:   {color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, draw.PyramidGlyph{}},
	// The base build's: the colours of its targets, lighter.
	ShardgateBase: {color.RGBA{R: 0x98, G: 0xdf, B: 0x8a, A: 0xff}, draw.TriangleGlyph{}},
	ShardedBase:   {color.RGBA{R: 0xc5, G: 0xb0, B: 0xd5, A: 0xff}, draw.PyramidGlyph{}},
}

// renderChart draws one row per test and ps-mode with two panels, QPS and
// p99 latency against threads, one line per target, and returns the PNG.
func renderChart(res *Results) ([]byte, error) {
	var rows [][]*plot.Plot
	for _, test := range res.Config.Tests {
		for _, ps := range res.Config.PSModes {
			qps, p99, err := groupPlots(res, test, ps)
			if err != nil {
				return nil, err
			}
			if qps != nil {
				rows = append(rows, []*plot.Plot{qps, p99})
			}
		}
	}
	if len(rows) == 0 {
		rows = [][]*plot.Plot{{emptyPlot("no results"), emptyPlot("")}}
	}
	const panelW, panelH = 6 * vg.Inch, 3 * vg.Inch
	img := vgimg.New(2*panelW, vg.Length(len(rows))*panelH)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(rows), Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		for j := range rows[i] {
			rows[i][j].Draw(canvases[i][j])
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

func emptyPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	return p
}

// groupPlots builds the QPS and the p99 panel of one test and ps-mode; both
// are nil when no cell of the group has a result.
func groupPlots(res *Results, test, ps string) (*plot.Plot, *plot.Plot, error) {
	qps := newThreadsPlot(res.Config.Threads, fmt.Sprintf("%s, ps=%s: QPS", test, ps), "queries/s")
	p99 := newThreadsPlot(res.Config.Threads, fmt.Sprintf("%s, ps=%s: p99 latency (log scale)", test, ps), "ms")
	found := false
	minP99, maxP99 := math.Inf(1), 0.0
	for _, t := range res.Config.targets() {
		var qpsXY, p99XY plotter.XYs
		for _, threads := range res.Config.Threads {
			c := res.Cell(test, ps, threads, t)
			if c == nil {
				continue
			}
			s := c.Summary()
			if s.OK == 0 {
				continue
			}
			qpsXY = append(qpsXY, plotter.XY{X: float64(threads), Y: s.QPS})
			p99ms := float64(s.P99) / float64(time.Millisecond)
			p99XY = append(p99XY, plotter.XY{X: float64(threads), Y: p99ms})
			minP99, maxP99 = math.Min(minP99, p99ms), math.Max(maxP99, p99ms)
		}
		if len(qpsXY) == 0 {
			continue
		}
		found = true
		if err := addSeries(qps, t, qpsXY); err != nil {
			return nil, nil, err
		}
		if err := addSeries(p99, t, p99XY); err != nil {
			return nil, nil, err
		}
	}
	if !found {
		return nil, nil, nil
	}
	if qps.Y.Max <= 0 {
		qps.Y.Max = 1
	}
	useLogY(p99, minP99, maxP99)
	return qps, p99, nil
}

// newThreadsPlot makes a panel with a logarithmic threads axis ticked at the
// thread counts of the matrix.
func newThreadsPlot(threads []int, title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "threads"
	p.Y.Label.Text = yLabel
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, t := range threads {
		ticks = append(ticks, plot.Tick{Value: float64(t), Label: strconv.Itoa(t)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min = float64(slices.Min(threads)) / 1.3
	p.X.Max = float64(slices.Max(threads)) * 1.3
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{plot.DefaultTicks{}}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func addSeries(p *plot.Plot, t Target, xys plotter.XYs) error {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("chart series %s: %w", t, err)
	}
	st := targetStyle[t]
	line.Color = st.color
	line.Width = vg.Points(1.5)
	points.Color = st.color
	points.Shape = st.shape
	points.Radius = vg.Points(3)
	p.Add(line, points)
	p.Legend.Add(string(t), line, points)
	// Leave head room above the highest point for the legend.
	for _, xy := range xys {
		if xy.Y*1.25 > p.Y.Max {
			p.Y.Max = xy.Y * 1.25
		}
	}
	return nil
}

// useLogY switches a latency panel to a logarithmic y axis, so that the
// sub-millisecond latencies of few threads stay readable next to the
// hundreds of milliseconds of many. Latencies are positive (the histogram's
// smallest bucket is 1 µs).
func useLogY(p *plot.Plot, minY, maxY float64) {
	if minY <= 0 || maxY <= 0 || math.IsInf(minY, 0) {
		return // nothing to scale
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plainTicks{plot.LogTicks{Prec: -1}}
	p.Y.Min, p.Y.Max = minY/1.5, maxY*4 // head room for the legend
}

// plainTicks prints tick labels as plain numbers (20000, 0.5) instead of the
// default fixed precision (20000.00).
type plainTicks struct{ plot.Ticker }

func (t plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := t.Ticker.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}
