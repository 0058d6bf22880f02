package proposalapply

import "flag"

func flagSet() *flag.FlagSet { return flag.NewFlagSet("test", flag.ContinueOnError) }
