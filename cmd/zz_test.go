package cmd
import ("testing";"path/filepath")
func TestZZShow(t *testing.T){
	fx := newProfileFixture(t)
	dir:=t.TempDir()
	for _, a := range [][]string{
		{"report","--elf",fx.fw.ELF,"--map",fx.fw.MapPath,fx.capture},
		{"report","--elf",fx.fw.ELF,"--map",fx.fw.MapPath,fx.capture,"--json"},
		{"rank","--elf",fx.fw.ELF,"--map",fx.fw.MapPath,fx.capture},
		{"rank","--elf",fx.fw.ELF,"--map",fx.fw.MapPath,fx.capture,"--json"},
		{"plan","--elf",fx.fw.ELF,"--map",fx.fw.MapPath,fx.capture,"--format","json","-o",filepath.Join(dir,"p.json")},
		{"diff","--elf",fx.fw.ELF,"--map",fx.fw.MapPath,fx.capture,fx.capture},
		{"diff","--elf",fx.fw.ELF,"--map",fx.fw.MapPath,fx.capture,fx.capture,"--json"},
		{"info",fx.capture},
	}{
		c,o,e:=tcmprof(a...)
		t.Logf("%v: %d\n%s\n--stderr\n%s", a[0], c, o, e)
	}
}
