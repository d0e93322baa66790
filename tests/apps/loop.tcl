# Tcl's event loop (tclsh, Tk, Python's tkinter) with stalls of each kind,
# for tests/test-programs.py tcl.  Each step runs from a timer callback and
# prints "step KIND begin US" / "step KIND end US" (clock microseconds):
#
#   busy     a 400 ms loop of Tcl code
#   sleep    `after 400`: Tcl_Sleep, a select() inside the callback
#   nested   `vwait` in the callback for 400 ms, serving a 10 ms timer:
#            a nested run of the loop, which answers meanwhile (no stall)
#   update   a 300 ms loop that calls `update` (zero-timeout waits)
#
# The steps are 150 ms apart, the loop idle in between.

proc now {} { clock microseconds }

proc spin {ms {update 0}} {
    set end [expr {[now] + $ms * 1000}]
    while {[now] < $end} {
        if {$update} { update }
    }
}

proc step {kind body} {
    puts "step $kind begin [now]"
    uplevel #0 $body
    puts "step $kind end [now]"
    flush stdout
}

proc tick {} {
    incr ::ticks
    if {!$::nested_done} { after 10 tick }
}

proc nested {} {
    set ::ticks 0
    set ::nested_done 0
    after 10 tick
    after 400 { set ::nested_done 1 }
    vwait ::nested_done
    puts "nested ticks=$::ticks"
}

set steps {
    {busy   {spin 400}}
    {sleep  {after 400}}
    {nested {nested}}
    {update {spin 300 1}}
}

proc next {i} {
    if {$i >= [llength $::steps]} {
        set ::done 1
        return
    }
    lassign [lindex $::steps $i] kind body
    step $kind $body
    after 150 [list next [expr {$i + 1}]]
}

puts "ready pid=[pid]"
flush stdout
after 150 {next 0}
vwait ::done
