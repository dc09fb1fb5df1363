# runtime/sources.cmake - the runtime library's sources, folder by folder.
# Each folder is one subsystem (docs/architecture.md says which does what);
# a new source file is added to its folder's list here.
set(MR_SUBSYSTEMS base files system kernel elf symbols unwind proc profile_data pprof profiler netparse dataplane
    script_host agent metrics http_server transport kube)

set(MR_SOURCES_base byte_queue.c grow_array.c guarded_buffer.c hash_index.c host_port.c intern.c log.c pid_table.c regex.c
    spsc_queue.c string_map.c thread.c)
set(MR_SOURCES_files file_read.c output_file.c pid_file.c safe_path.c text_file.c unnamed_file.c)
set(MR_SOURCES_system clock.c network_identity.c signals.c terminal.c uuid.c version.c)
set(MR_SOURCES_kernel bpf_errors.c btf.c check.c tracefs.c)
set(MR_SOURCES_elf elf_debug_file.c elf_file.c)
set(MR_SOURCES_symbols sym_demangle.c sym_elf.c sym_file.c sym_file_cache.c sym_kallsyms.c sym_perf_map.c sym_plt.c
    sym_process.c sym_roots.c sym_table.c sym_vdso.c symbolizer.c)
set(MR_SOURCES_unwind unwind_cache.c unwind_debug_frame.c unwind_fde_index.c unwind_file.c unwind_rule.c unwind_source.c unwind_table.c unwinder.c)
set(MR_SOURCES_proc proc_files.c proc_maps.c proc_root.c proc_stat.c proc_watch.c)
set(MR_SOURCES_profile_data profile.c profile_copy.c profile_samples.c)
set(MR_SOURCES_pprof pprof_gzip.c pprof_message.c pprof_samples.c pprof_symbols.c pprof_writer.c)
set(MR_SOURCES_profiler cpu_clock.c online_cpus.c profiler.c profiler_check.c profiler_drain.c profiler_processes.c
    profiler_threads.c)
set(MR_SOURCES_netparse http1_scan.c)
set(MR_SOURCES_dataplane data_plane.c data_plane_bpf.c data_plane_check.c data_plane_conns.c data_plane_streams.c
    data_plane_thread.c)
set(MR_SOURCES_script_host cli.c script.c script_api.c script_list.c script_memory.c script_owner.c script_set.c
    script_state.c script_traceback.c script_trust.c watchdog.c)
set(MR_SOURCES_agent agent.c agent_health.c agent_kube_stats.c agent_net_stats.c agent_reload.c agent_stats.c agent_status.c)
set(MR_SOURCES_metrics metrics.c metrics_bounds.c metrics_labels.c metrics_mark.c metrics_render.c)
set(MR_SOURCES_http_server http_conn.c http_endpoint.c http_listener.c http_request.c)
set(MR_SOURCES_transport transport.c transport_call.c transport_connectivity.c transport_credentials.c
    transport_messages.c transport_results.c transport_thread.c)
set(MR_SOURCES_kube kube_body.c kube_changes.c kube_client.c kube_events.c kube_get.c kube_json.c kube_request.c
    kube_store.c kube_thread.c kube_token.c kube_watch.c kube_watch_done.c)

set(MR_RUNTIME_SOURCES)
foreach(dir ${MR_SUBSYSTEMS})
  foreach(file ${MR_SOURCES_${dir}})
    list(APPEND MR_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/${dir}/${file})
  endforeach()
endforeach()
