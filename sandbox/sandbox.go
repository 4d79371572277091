package sandbox

import (
	"github.com/sema-agent/sema"
)

// Mode says whether commands run confined.
type Mode string

const (
	// ModeAuto confines commands where the kernel can, and says which in the manifest.
	// The default.
	ModeAuto Mode = "auto"
	// ModeOn confines every command; a kernel that cannot makes the run refuse to start
	// (sandbox.unavailable).
	ModeOn Mode = "on"
	// ModeOff runs commands with the permission fold's analysis as the only wall.
	ModeOff Mode = "off"
)

// Codes of the sandbox's refusals.
const (
	// CodeUnavailable refuses a run that asked for the sandbox (ModeOn) on a machine
	// whose kernel cannot confine commands.
	CodeUnavailable = "sandbox.unavailable"
	// CodeModeInvalid refuses a sandbox mode word other than auto, on and off.
	CodeModeInvalid = "config.sandbox_invalid"
	// CodeNetworkInvalid refuses a network word other than on and off.
	CodeNetworkInvalid = "config.sandbox_network_invalid"
	// CodeLoosened refuses a task that turns off (or opens the network of) a sandbox its
	// deployment turned on (or closed).
	CodeLoosened = "config.sandbox_loosened"
)

// Codes of the runner's sandbox notices: the run goes on.
const (
	// CodeOff: the sandbox was left on auto and commands run without it; the notice
	// says why (the kernel cannot confine them, or the env is not the host's).
	CodeOff = "sandbox.off"
	// CodePartial: commands are confined, but not by every mechanism (a Landlock level
	// or a namespace is missing); the notice says which.
	CodePartial = "sandbox.partial"
)

// ParseMode reads a mode word; "" is ModeAuto. Anything else is refused by name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeOn, ModeOff:
		return Mode(s), nil
	}
	return "", sema.Errorf(CodeModeInvalid, "the sandbox mode %q is not one of auto, on, off", s).With("value", s)
}

// ParseNetwork reads a network word: "on" or "off".
func ParseNetwork(s string) (bool, error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, sema.Errorf(CodeNetworkInvalid, "the sandbox network setting %q is not one of on, off", s).With("value", s)
}

// Status is what the sandbox does for a leg, as the manifest reports it.
type Status struct {
	// Enforced: commands run confined by the kernel.
	Enforced bool `json:"sandboxed"`
	// Mode is the mode that was asked for.
	Mode Mode `json:"mode"`
	// Landlock is the kernel's Landlock ABI version in use (0: none).
	Landlock int `json:"landlock_abi,omitempty"`
	// MountNamespace: hidden and protected paths inside the roots are enforced too.
	MountNamespace bool `json:"mount_namespace,omitempty"`
	// NetworkNamespace: a command without network gets a network namespace of its own.
	NetworkNamespace bool `json:"network_namespace,omitempty"`
	// Network: commands may reach the network.
	Network bool `json:"network"`
	// Reason says why the sandbox is off or partial; empty when it is whole.
	Reason string `json:"reason,omitempty"`
	// Confines names the protections commands have (Kernel.Coverage): filesystem,
	// view, network, processes, signals, terminals, privileges, caches.
	Confines []string `json:"confines,omitempty"`
	// Missing names the protections this kernel cannot give, each with what it needs.
	Missing []string `json:"missing,omitempty"`
	// NotConfined is what the sandbox does not hold on any kernel (NotConfined).
	NotConfined []string `json:"not_confined,omitempty"`
}
